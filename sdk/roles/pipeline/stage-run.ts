import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "../../backends/native/addon";
import { NativeBackend } from "../../backends/native/backend";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import type { HostIO } from "../role";

/** How a stage reaches its neighbours and its replicas (the worker's host provides these). */
export type StageIO = Pick<HostIO, "receive" | "send" | "allReduce">;

/** When each forward (F) and backward (B) of a micro-batch ran, in ms from the step's start. */
export type ActionTimings = Array<{ kind: "F" | "B"; micro: number; start: number; end: number }>;

/** One step's bookkeeping on a stage, from its first action to its update. */
export interface StageRun {
  msg: MessageOf<"step">;
  micro: NonNullable<MessageOf<"step">["micro"]>;
  io: StageIO;
  xs: Tensorlike[];
  ys: Tensorlike[];
  first: boolean;
  t0: number;
  startedAt: number;
  /**
   * What the stage's replicas all-reduce, laid out flat: the accumulated gradient of its
   * variables, the change of its layers' state (BatchNormalization's moving statistics) and a
   * flag that drops the update everywhere.
   */
  acc: Float32Array;
  /** The state before the step, to go back to when the update is dropped. */
  stateBefore: Float32Array;
  /** What threw in this stage's computation: the stage goes on sending zeros so no neighbour waits, then reports it. */
  failure?: unknown;
  inputNonFinite: boolean;
  /** Inputs of micro-batches whose forward ran and whose backward has not. */
  saved: Map<number, tf.Tensor>;
  timings: ActionTimings;
  loss: number;
  /** The last stage's compiled metrics, summed weighted by micro-batch share as the loss. */
  metrics: Record<string, number>;
  waitMs: number;
  inFlightMax: number;
  add: (acc: Float32Array, g: tf.Tensor, offset: number) => void;
}


export function copyOut(t: tf.Tensor): Float32Array {
  const b = tf.backend();
  return Float32Array.from(b instanceof NativeBackend ? b.values(t) : (t.dataSync() as Float32Array));
}

/** acc[offset ..] += g: natively from the tensor's memory where possible. */
export function accumulator(): (acc: Float32Array, g: tf.Tensor, offset: number) => void {
  const load = loadAddon();
  return (acc, g, offset) => {
    const b = tf.backend();
    const values = b instanceof NativeBackend ? b.values(g) : (g.dataSync() as Float32Array);
    if (load.ok) load.addon.accumulate(acc, values, offset);
    else for (let i = 0; i < values.length; i++) acc[offset + i]! += values[i]!;
  };
}
