import type { FlatRanges } from "./flat-state";
import { copyOverlap, rangesLength } from "./flat-state";
import type * as tf from "@tensorflow/tfjs";
import type { Tensorlike } from "../protocol/tensor";

/**
 * Loading a ZeRO-3 replica without the whole model on it (FSDP's meta-device initialisation,
 * DeepSpeed's zero.Init): the worker builds the model from a topology whose initializers are
 * all zeros, which on Linux costs no resident memory (fresh zeroed pages are mapped only when
 * written, and a replica lets them go unwritten), is sent the weights that are not trained
 * whole, and then only its own ranges of the trainable ones, laid flat.
 */

/** Keras's topology with every `*_initializer` a Zeros: the values come from the driver afterwards. */
export function zeroInitialized(topology: Record<string, unknown>): Record<string, unknown> {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== "object") return v;
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [
        k,
        k.endsWith("_initializer") && x !== null && typeof x === "object"
          ? { class_name: "Zeros", config: {} }
          : walk(x),
      ]),
    );
  };
  return walk(topology) as Record<string, unknown>;
}

/**
 * The trainable weights laid flat (as the gradient lays them: model.trainableWeights in
 * order), read over `ranges`: what one ZeRO-3 replica holds of them.
 */
export function flatRangesOf(trainable: readonly Tensorlike[], ranges: FlatRanges): Float32Array {
  const out = new Float32Array(rangesLength(ranges));
  let at = 0;
  for (const t of trainable) {
    const data = t.data as Float32Array;
    copyOverlap(data, [[at, at + data.length]], out, ranges);
    at += data.length;
  }
  return out;
}

/** The model's weights that training does not update (model.weights' others, in its order): what a ZeRO-3 load in parts sends whole. */
export function untrainedWeights(model: tf.LayersModel): tf.LayersModel["weights"] {
  const trained = new Set(model.trainableWeights);
  return model.weights.filter((w) => !trained.has(w));
}
