import type { WorkerInfo } from "../protocol/messages";

/** What the user sees of a worker: who it is, where, and what it computes on. */
export interface WorkerSnapshot {
  readonly rank: number;
  readonly address: string;
  /** Started by this driver on this machine. */
  readonly local: boolean;
  readonly info: WorkerInfo;
}
