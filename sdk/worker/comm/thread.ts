import { parentPort, workerData } from "node:worker_threads";
import type { ErrorDetails } from "../../errors/errors";
import { Channel, type ChannelOptions } from "../../transport/channel";
import type { Link } from "../../transport/link";
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

/** A control channel to the driver or a peer, with this worker's limits; refused frames are logged. */
export function channelTo(link: Link, peerName: string, details: ErrorDetails, on: Pick<ChannelOptions, "onMessage" | "onClose">): Channel {
  return new Channel(link, {
    peerName,
    details,
    chunkElements: 256 * 1024,
    maxFrameBytes: config.maxFrameBytes,
    maxAttachmentBytes: MAX_ATTACHMENT_BYTES,
    ...on,
    onInvalid: (err) => log(`refused a frame from ${peerName}: ${err.summary}`),
  });
}

/** Messages from the compute thread. */
export function onCompute(handler: (m: ComputeToComm) => void): void {
  port.on("message", handler);
}
