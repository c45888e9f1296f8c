import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../errors/errors";
import type { Tensorlike } from "../protocol/tensor";

/** Host copies of tensors, for attachments. */
export function hostCopies(ts: readonly tf.Tensor[]): Tensorlike[] {
  return ts.map((w) => ({
    data: w.dtype === "int32" ? Int32Array.from(w.dataSync() as Int32Array) : Float32Array.from(w.dataSync() as Float32Array),
    shape: [...w.shape],
  }));
}

export function setModelWeights(model: tf.LayersModel, weights: readonly Tensorlike[]): void {
  const current = model.weights;
  if (current.length !== weights.length) {
    throw new ModelError(`the workers returned ${weights.length} weights for a model with ${current.length}`);
  }
  const tensors = weights.map((t, i) => tf.tensor(t.data, [...t.shape], current[i]!.dtype));
  model.setWeights(tensors);
  tf.dispose(tensors);
}
