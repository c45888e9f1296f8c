import * as tf from "@tensorflow/tfjs";
import { nodeIn } from "./layer-nodes";

/** Layers that make a mask from their input: Embedding with maskZero, and Masking. */
function makesMask(l: tf.layers.Layer): boolean {
  const c = l.getConfig() as { maskZero?: boolean };
  return l.getClassName() === "Masking" || (l.getClassName() === "Embedding" && c.maskZero === true);
}

/** Each model's answer, found once: plans summarise a model many times. */
const seen = new WeakMap<tf.LayersModel, Map<string, string>>();

/**
 * The layers whose output carries a mask, each with the layer that made it. A stage passes
 * only its activation to the next, so a point such an output crosses cannot be a cut: the
 * layers after it would run unmasked (an LSTM then reads the padding as data). Found by running
 * the model once on a sample of two, as TF.js computes masks (each layer's computeMask); only
 * models with a layer that makes a mask are run.
 */
export function maskedOutputs(model: tf.LayersModel): ReadonlyMap<string, string> {
  const known = seen.get(model);
  if (known) return known;
  const masked = new Map<string, string>();
  seen.set(model, masked);
  const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer");
  if (!layers.some(makesMask)) return masked;
  try {
    tf.tidy(() => walk(model, layers, masked));
  } catch {
    // Where TF.js cannot compute the masks on a sample, every output from the first layer that makes one on is taken to carry it: no cut there, rather than one that drops it.
    const first = layers.findIndex(makesMask);
    for (const l of layers.slice(first)) masked.set(l.name, layers[first]!.name);
  }
  return masked;
}

interface Value {
  x: tf.Tensor;
  mask: tf.Tensor | null;
  /** The layer that made the mask this value carries or had carried on its way. */
  maker: string | null;
}

interface LayerCall {
  inputTensors: tf.SymbolicTensor[];
  outputTensors: tf.SymbolicTensor[];
}

/** Runs the model on a sample of two (null dimensions 2) as TF.js's executor does, noting each output that carries a mask. */
function walk(model: tf.LayersModel, layers: readonly tf.layers.Layer[], masked: Map<string, string>): void {
  const sample = (s: tf.SymbolicTensor): Value => ({
    x: tf.zeros(
      s.shape.map((d) => d ?? 2),
      s.dtype,
    ),
    mask: null,
    maker: null,
  });
  const values = new Map<number, Value>(model.inputs.map((s) => [s.id, sample(s)]));
  for (const l of layers) {
    const node = nodeIn(model, l) as unknown as LayerCall | null;
    const ins = node?.inputTensors.map((t) => values.get(t.id));
    if (!node || !ins || ins.some((v) => v === undefined)) continue;
    const xs = ins.map((v) => v!.x);
    const masks = ins.map((v) => v!.mask);
    // As TF.js's executor runs a layer: the first input's mask as `mask` where any input has one, and an output mask only from a layer that supports masking.
    const out = l.apply(xs, masks.some((m) => m !== null) ? { mask: masks[0] } : {}) as tf.Tensor | tf.Tensor[];
    const computed = l.supportsMasking
      ? (l.computeMask(xs, masks as tf.Tensor[]) as tf.Tensor | tf.Tensor[] | null)
      : null;
    const mask = Array.isArray(computed) ? (computed[0] ?? null) : computed;
    const maker = makesMask(l) ? l.name : (ins.find((v) => v!.maker !== null)?.maker ?? null);
    const outs = Array.isArray(out) ? out : [out];
    node.outputTensors.forEach((t, k) => values.set(t.id, { x: outs[k]!, mask, maker }));
    if (mask && maker) masked.set(l.name, maker);
  }
}
