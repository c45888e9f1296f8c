import * as tf from "@tensorflow/tfjs";
import { hasNonFinite } from "../backends/native/finite";
import { WorkerError } from "../errors/errors";
import type { Tensorlike } from "../protocol/tensor";
import type { MetricSpec } from "../protocol/metric-spec";

/** Where a worker found NaN or Infinity in a step (the stepDone's nonFinite). */
export interface NonFinite {
  /** "compression": the gradients, each finite, summed to a value the 16-bit format cannot hold. */
  where: "input" | "loss" | "gradient" | "compression";
  variable?: string;
}

/**
 * The first variable whose slice of `flat` holds a non-finite value (only looked for once one is
 * known to); only variables inside [from, to) are read (a bucket's, while others are in flight).
 */
export function nonFiniteVariable(
  flat: Float32Array,
  names: readonly string[],
  sizes: readonly number[],
  from = 0,
  to = flat.length,
): string | undefined {
  let off = 0;
  for (let i = 0; i < sizes.length; i++) {
    if (off >= from && off + sizes[i]! <= to && hasNonFinite(flat.subarray(off, off + sizes[i]!))) return names[i];
    off += sizes[i]!;
  }
  return undefined;
}

/** Where a computed slice went non-finite: its loss, else the first variable whose gradient did. */
export function nonFiniteIn(
  loss: number,
  grads: Float32Array,
  names: readonly string[],
  sizes: readonly number[],
): NonFinite | undefined {
  if (!Number.isFinite(loss)) return { where: "loss" };
  if (!hasNonFinite(grads)) return undefined;
  return { where: "gradient", variable: nonFiniteVariable(grads, names, sizes) ?? "?" };
}

/** What a slice's inputs hold that no step can learn from. */
export function inputNonFinite(...ts: Tensorlike[]): NonFinite | undefined {
  return ts.some((t) => hasNonFinite(t.data)) ? { where: "input" } : undefined;
}

/** Targets as losses take them: float32 (int32 class labels for a sparse loss are cast, as users expect). */
export function labelTensor(y: Tensorlike): tf.Tensor {
  return tf.tensor(y.data instanceof Float32Array ? y.data : Float32Array.from(y.data), [...y.shape], "float32");
}

/** The compiled metrics of a batch's predictions as scalar tensors, in the specs' order (a device reads them with the gradient). */
export function metricScalars(specs: readonly MetricSpec[], y: tf.Tensor, out: tf.Tensor): tf.Scalar[] {
  return specs.map((s) => tf.mean(tf.metrics[s.fn](y, out)) as tf.Scalar);
}

/** The compiled metrics of a batch's predictions, each the mean over the batch, by history name (read on the host). */
export function metricValues(
  specs: readonly MetricSpec[],
  y: tf.Tensor,
  out: tf.Tensor,
): Record<string, number> | undefined {
  if (specs.length === 0) return undefined;
  const values: Record<string, number> = {};
  for (const s of specs) {
    values[s.name] = tf.tidy(() => (tf.mean(tf.metrics[s.fn](y, out)) as tf.Scalar).dataSync()[0]!);
  }
  return values;
}

/**
 * A failure inside a step that the worker survived, having done its part of the step's
 * communication: the driver stops the fit and the cluster stays ready. `cause` is what threw,
 * with its stack.
 */
export function survivedStepError(err: unknown, step: number): WorkerError {
  const what = err instanceof Error ? `${err.name}: ${err.message.split("\n")[0]}` : String(err);
  return new WorkerError(`step ${step} failed on this worker: ${what}`, {
    hint: "the cause below is the worker's own error and stack; the cluster is still ready for the next fit",
    details: { step, clusterIntact: true },
    cause: err,
  });
}
