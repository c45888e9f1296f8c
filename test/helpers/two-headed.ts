import * as tf from "@tensorflow/tfjs";
import { datasets, type Dataset } from "../../sdk/index";

/**
 * A model with two inputs and two outputs, as date-conversion-attention and multi-task models
 * have: "features" and "context" inputs joined, a shared trunk, a "label" head (softmax over 3
 * classes) and a "score" head (one value). Seeded: the same weights every build.
 */
export function twoHeaded(seed = 1): tf.LayersModel {
  const features = tf.input({ shape: [4], name: "features" });
  const context = tf.input({ shape: [3], name: "context" });
  const joined = tf.layers.concatenate().apply([features, context]) as tf.SymbolicTensor;
  const trunk = tf.layers.dense({ units: 8, activation: "tanh", kernelInitializer: tf.initializers.glorotUniform({ seed }) }).apply(joined) as tf.SymbolicTensor;
  const label = tf.layers.dense({ units: 3, activation: "softmax", name: "label", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }).apply(trunk) as tf.SymbolicTensor;
  const score = tf.layers.dense({ units: 1, name: "score", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }).apply(trunk) as tf.SymbolicTensor;
  return tf.model({ inputs: [features, context], outputs: [label, score], name: "two_headed" });
}

/** Seeded samples for twoHeaded: x as tensors per input, y per output (one-hot labels, scores). */
export function twoHeadedTensors(n: number, seed: number): { features: tf.Tensor; context: tf.Tensor; label: tf.Tensor; score: tf.Tensor } {
  return tf.tidy(() => {
    const features = tf.randomUniform([n, 4], -1, 1, "float32", seed);
    const context = tf.randomUniform([n, 3], -1, 1, "float32", seed + 1);
    const label = tf.oneHot(tf.argMax(tf.add(features.slice([0, 0], [n, 3]), context), 1), 3).toFloat();
    const score = tf.sum(tf.mul(features, 0.5), 1, true);
    return { features, context, label, score };
  });
}

/** The same samples as a dataset, from maps by input and output name given in another order than the model's. */
export function twoHeadedData(n: number, seed: number): Dataset {
  const t = twoHeadedTensors(n, seed);
  return datasets.fromTensors({ context: t.context, features: t.features }, { score: t.score, label: t.label }, `two-headed-${seed}`);
}

/**
 * The same inputs and outputs wired for stages: "features" feeds a trunk whose "label" head
 * leaves early, and "context" joins the trunk only after it, so a stage past the first reads a
 * model input and the first stage makes an output.
 */
export function lateContext(seed = 1): tf.LayersModel {
  const features = tf.input({ shape: [4], name: "features" });
  const context = tf.input({ shape: [3], name: "context" });
  const trunk = tf.layers.dense({ units: 8, activation: "tanh", name: "trunk", kernelInitializer: tf.initializers.glorotUniform({ seed }) }).apply(features) as tf.SymbolicTensor;
  const label = tf.layers.dense({ units: 3, activation: "softmax", name: "label", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }).apply(trunk) as tf.SymbolicTensor;
  const joined = tf.layers.concatenate({ name: "join" }).apply([trunk, context]) as tf.SymbolicTensor;
  const mixed = tf.layers.dense({ units: 6, activation: "tanh", name: "mix", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }).apply(joined) as tf.SymbolicTensor;
  const score = tf.layers.dense({ units: 1, name: "score", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 3 }) }).apply(mixed) as tf.SymbolicTensor;
  return tf.model({ inputs: [features, context], outputs: [label, score], name: "late_context" });
}
