import type { CommHookSpec } from "../protocol/comm-hook-spec";
import type { GradientSumSpec } from "../protocol/gradient-sum-spec";
import type { ReplicaStepChoice } from "../protocol/profile-messages";

/**
 * A model's layers and replica step timed on a worker's backend (PipeDream's profile), which
 * the cost model prefers to FLOP counts: a layer's time depends on its shapes in ways FLOPs do
 * not show (a 3x3 convolution of one input channel runs at a tenth of the matrix speed).
 */
export interface ModelProfile {
  /** Batch sizes timed, ascending. */
  readonly batches: readonly number[];
  /** Per layer, as plans number them: ms at each batch. */
  readonly layers: ReadonlyArray<{ readonly forwardMs: readonly number[]; readonly backwardMs: readonly number[] }>;
  /** A data-parallel replica's whole step (forward, loss, backward, update) at each batch. */
  readonly replicaStepMs: readonly number[];
  readonly replicaStep: ReplicaStepChoice;
  /** Which worker it was timed on, in words. */
  readonly timedOn: string;
  /**
   * The most crowded machine's workers all stepping at once (at the first batch): each step took
   * `slowdown` times the step timed alone. Absent where no machine has more than one worker.
   */
  readonly sharing?: { readonly workers: number; readonly slowdown: number };
  /** The comm hook the profile was asked to time, and its own work a step in ms where it has a probe (PowerSGD's). */
  readonly hook?: { readonly spec: CommHookSpec; readonly ms?: number };
  /** The summing scheme the profile was asked to time, and its own work in ms where it has a probe (a local-SGD sync's, per sync). */
  readonly sum?: { readonly spec: GradientSumSpec; readonly ms?: number };
}

/**
 * Time at batch b from times at the profiled batches: a line through the two nearest, since a
 * layer costs a fixed part (kernel launches) plus a part per sample. Never below zero, and the
 * per-sample part never negative (noise between two close batches must not bend it).
 */
export function atBatch(batches: readonly number[], ms: readonly number[], b: number): number {
  if (batches.length === 0 || ms.length !== batches.length) return NaN;
  if (batches.length === 1) return (ms[0]! * b) / batches[0]!;
  let i = batches.findIndex((x) => x >= b);
  if (i <= 0) i = i === 0 ? 1 : batches.length - 1;
  const [b0, b1, t0, t1] = [batches[i - 1]!, batches[i]!, ms[i - 1]!, ms[i]!];
  const slope = Math.max(0, (t1 - t0) / (b1 - b0));
  return Math.max(0, t0 + slope * (b - b0));
}

/** Forward and backward ms of layers [from, to) at batch b. */
export function layersMs(
  p: ModelProfile,
  from: number,
  to: number,
  b: number,
): { forwardMs: number; backwardMs: number } {
  let forwardMs = 0;
  let backwardMs = 0;
  for (const l of p.layers.slice(from, to)) {
    forwardMs += atBatch(p.batches, l.forwardMs, b);
    backwardMs += atBatch(p.batches, l.backwardMs, b);
  }
  return { forwardMs, backwardMs };
}

/** The batches a fit's plan will ask about lie between an eighth of the global batch and all of it. */
export function profileBatches(globalBatch: number): number[] {
  const small = Math.max(1, Math.round(globalBatch / 8));
  return small < globalBatch ? [small, globalBatch] : [globalBatch];
}
