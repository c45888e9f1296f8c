import type { Op } from "./op";
import type { Penalty } from "./regularizers";

/** One op of a schedule, wired to the step's arrays (storages) by index. */
export interface ScheduledOp {
  op: Op;
  inputs: number[];
  outputs: number[];
  /** The storage of the mask its layer receives, or null. */
  mask: number | null;
  /** Whether it runs backward: an output reaches a loss, and it or something before it trains. */
  backward: boolean;
  /** For each input: whether its gradient is needed, and whether it is added to what is there. */
  needDx: boolean[];
  addDx: boolean[];
  /** Outputs whose gradient nothing writes (they reach no loss), zeroed before its backward pass. */
  zeroFirst: number[];
  /** Penalties of weights whose last use this op is (applied once their gradient is final). */
  penalties: Penalty[];
}

/** A model compiled for one set of per-sample input shapes. */
export interface Schedule {
  ops: ScheduledOp[];
  /** Elements a sample of each storage holds, and whether it gets a gradient array. */
  sizes: number[];
  grads: boolean[];
  inputs: number[];
  outputs: number[];
  outShapes: number[][];
  /** Which arrays hold the storages' values and gradients. */
  slots: Slots;
}

/**
 * Which array holds each storage's values and each one's gradient, planned once per schedule:
 * an activation whose gradient reads only its output runs in place over an input nothing else
 * reads and whose producer's backward pass does not read it (ReLU after BatchNormalization or an
 * Add); gradients share arrays whose lives do not overlap (a gradient lives from the first
 * backward pass that writes it to its producer's, which reads it last). Sizes are per sample.
 */
export interface Slots {
  value: number[];
  grad: number[];
  valueSizes: number[];
  gradSizes: number[];
  /** Value slots that are the model's inputs: the step reads them where they arrive. */
  inputs: Set<number>;
}
