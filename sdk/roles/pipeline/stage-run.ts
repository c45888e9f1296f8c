import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "../../backends/native/addon";
import { NativeBackend } from "../../backends/native/backend";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import type { HostIO } from "../role";
import { readConcat, readTensor } from "../../compute/device-io";

/** How a stage reaches its neighbours and its replicas (the worker's host provides these). */
export type StageIO = Pick<HostIO, "receive" | "send" | "allReduce">;

/** When each forward (F) and backward (B) of a micro-batch ran, in ms from the step's start. */
export type ActionTimings = Array<{ kind: "F" | "B"; micro: number; start: number; end: number }>;

/** One step's bookkeeping on a stage, from its first action to its update. */
export interface StageRun {
  msg: MessageOf<"step">;
  micro: NonNullable<MessageOf<"step">["micro"]>;
  io: StageIO;
  /** Per model input the stage reads, and per output it makes the targets of: one tensor per micro-batch. */
  xs: Tensorlike[][];
  ys: Tensorlike[][];
  first: boolean;
  t0: number;
  startedAt: number;
  /**
   * What the stage's replicas all-reduce, laid out flat: the accumulated gradient of its
   * variables, the change of its layers' state (BatchNormalization's moving statistics) and a
   * flag that drops the update everywhere.
   */
  acc: Float32Array;
  /** The state before the step, to go back to when the update is dropped, and after its forward passes. */
  stateBefore: Float32Array;
  stateNow: Float32Array;
  /** What threw in this stage's computation: the stage goes on sending zeros so no neighbour waits, then reports it. */
  failure?: unknown;
  inputNonFinite: boolean;
  /** Inputs of micro-batches whose forward ran and whose backward has not. */
  saved: Map<number, tf.Tensor[]>;
  timings: ActionTimings;
  loss: number;
  /** The compiled metrics of the outputs the stage makes, summed weighted by micro-batch share as the loss. */
  metrics: Record<string, number>;
  waitMs: number;
  inFlightMax: number;
  /** Where the backward passes put their gradients, loss and metrics. */
  sink: GradientSink;
}

/** A tensor's values as a copy to send to a neighbour (read back from the device on a GPU). */
export async function copyOut(t: tf.Tensor): Promise<Float32Array> {
  return Float32Array.from(await readTensor(t));
}

/**
 * Where a stage's backward passes put their gradients, weighted loss and metrics over a step's
 * micro-batches: added into the host buffer as they come on the CPU backends, or kept and added
 * on the device and read back once when the step's micro-batches are done.
 */
export interface GradientSink {
  /** Adds one micro-batch's variable gradients and (last stage) its weighted loss and metrics; takes ownership of none. */
  add(grads: readonly tf.Tensor[], loss: tf.Scalar | null, metrics: readonly tf.Scalar[]): void;
  /** Writes the sums into acc[0..] (variables in order), returns the loss and metric sums, and the state tensors' values read with them. */
  finish(
    acc: Float32Array,
    state: readonly tf.Tensor[],
  ): Promise<{ loss: number; metrics: number[]; stateNow: Float32Array }>;
  dispose(): void;
}

/** On the host: each micro-batch's gradients added into the step's buffer at once (natively where the addon was built). */
export function hostSink(acc: Float32Array, offsets: readonly number[], metricCount: number): GradientSink {
  const add = accumulator();
  let loss = 0;
  const metrics = new Array<number>(metricCount).fill(0);
  return {
    add(grads, l, ms) {
      grads.forEach((g, i) => add(acc, g, offsets[i]!));
      if (l) loss += l.dataSync()[0]!;
      ms.forEach((m, i) => (metrics[i]! += m.dataSync()[0]!));
    },
    async finish(_acc, state) {
      return { loss, metrics, stateNow: await readConcat(state) };
    },
    dispose: () => undefined,
  };
}

/** On a device: sums kept there, read back with the state in one read. */
export function deviceSink(metricCount: number): GradientSink {
  let sums: tf.Tensor[] | null = null;
  let loss: tf.Scalar | null = null;
  let metrics: tf.Scalar[] = [];
  const plus = (a: tf.Tensor | null, b: tf.Tensor): tf.Tensor => {
    const r = a ? tf.add(a, b) : b.clone();
    a?.dispose();
    return r;
  };
  return {
    add(grads, l, ms) {
      sums = grads.map((g, i) => plus(sums?.[i] ?? null, g));
      if (l) loss = plus(loss, l) as tf.Scalar;
      metrics = ms.map((m, i) => plus(metrics[i] ?? null, m) as tf.Scalar);
    },
    async finish(acc, state) {
      const scalars = [
        loss ?? tf.scalar(0),
        ...(metrics.length === metricCount ? metrics : Array.from({ length: metricCount }, () => tf.scalar(0))),
      ];
      const values = await readConcat([...scalars, ...(sums ?? []), ...state]);
      tf.dispose(scalars);
      const gradientLength = (sums ?? []).reduce((n, t) => n + t.size, 0);
      acc.set(values.subarray(1 + metricCount, 1 + metricCount + gradientLength));
      return {
        loss: values[0]!,
        metrics: Array.from(values.subarray(1, 1 + metricCount)),
        stateNow: values.slice(1 + metricCount + gradientLength),
      };
    },
    dispose() {
      tf.dispose([...(sums ?? []), ...(loss ? [loss] : []), ...metrics]);
      sums = null;
      loss = null;
      metrics = [];
    },
  };
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
