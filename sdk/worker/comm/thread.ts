import { parentPort, workerData } from "node:worker_threads";
import type { CommConfig, CommToCompute, ComputeToComm } from "../bridge";

/** What every part of the communication thread shares: its configuration and its way to the compute thread. */
export const config = workerData as CommConfig;
const port = parentPort!;
export const MAX_ATTACHMENT_BYTES = 4 * 1024 * 1024 * 1024;

export function toCompute(m: CommToCompute, transfer: ArrayBuffer[] = []): void {
  port.postMessage(m, transfer);
}

export function log(text: string): void {
  process.stderr.write(`[meshtrain worker ${process.pid}] ${text}\n`);
}

/** Messages from the compute thread. */
export function onCompute(handler: (m: ComputeToComm) => void): void {
  port.on("message", handler);
}
