import type { CommConfig, CommToCompute, ComputeToComm } from "../bridge";

/**
 * thread.ts for a browser tab: the communication thread is a Web Worker, and its configuration
 * arrives as the page's first message (comm-entry.ts fills it in before the server starts).
 */
export const config = {} as CommConfig;
export const MAX_ATTACHMENT_BYTES = 1024 * 1024 * 1024;

interface WorkerScope {
  postMessage(m: unknown, transfer: Transferable[]): void;
  addEventListener(type: "message", listener: (e: MessageEvent) => void): void;
}
const scope = self as unknown as WorkerScope;

export function toCompute(m: CommToCompute, transfer: ArrayBuffer[] = []): void {
  scope.postMessage(m, transfer);
}

export function log(text: string): void {
  console.warn(`[meshtrain tab] ${text}`);
}

/** Messages from the compute thread (the page), the configuration excepted. */
export function onCompute(handler: (m: ComputeToComm) => void): void {
  scope.addEventListener("message", (e) => {
    const m = e.data as ComputeToComm | { kind: "config" };
    if (m.kind !== "config") handler(m);
  });
}
