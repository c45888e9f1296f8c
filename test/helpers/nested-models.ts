import * as tf from "@tensorflow/tfjs";

const glorot = (seed: number) => tf.initializers.glorotUniform({ seed });

/** A model of two Dense layers, 4 -> 5 -> 3, to nest inside another. */
function innerModel(seed: number): tf.LayersModel {
  const x = tf.input({ shape: [4] });
  const h = tf.layers.dense({ units: 5, activation: "relu", kernelInitializer: glorot(seed) }).apply(x) as tf.SymbolicTensor;
  const y = tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: glorot(seed + 1) }).apply(h) as tf.SymbolicTensor;
  return tf.model({ inputs: x, outputs: y });
}

/**
 * 6 -> Dense(4) -> a nested tf.model, frozen as a whole (`inner.trainable = false`) unless
 * `frozen` is false: the GAN pattern, where the combined model trains the generator through a
 * discriminator that stays as it is.
 */
export function frozenNested(frozen = true, seed = 3): tf.LayersModel {
  const inner = innerModel(seed);
  if (frozen) inner.trainable = false;
  const x = tf.input({ shape: [6] });
  const h = tf.layers.dense({ units: 4, kernelInitializer: glorot(seed + 2) }).apply(x) as tf.SymbolicTensor;
  return tf.model({ inputs: x, outputs: inner.apply(h) as tf.SymbolicTensor });
}

/**
 * A Sequential built for [4] applied to [7, 4] inside a functional model: its two calls have
 * different output shapes ([null, 2] in its own graph, [null, 7, 2] here), which TF.js refuses to
 * name as one.
 */
export function nestedOnSequences(): tf.LayersModel {
  const seq = tf.sequential({
    layers: [
      tf.layers.dense({ units: 5, activation: "relu", inputShape: [4], kernelInitializer: glorot(1) }),
      tf.layers.dense({ units: 2, kernelInitializer: glorot(2) }),
    ],
  });
  const x = tf.input({ shape: [7, 4] });
  const h = tf.layers.flatten().apply(seq.apply(x)) as tf.SymbolicTensor;
  return tf.model({ inputs: x, outputs: tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: glorot(3) }).apply(h) as tf.SymbolicTensor });
}

/** Embedding(maskZero) -> LSTM(4) -> Dense: ids padded with 0 at the front, which the LSTM must skip. */
export function maskedLstm(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.embedding({ inputDim: 10, outputDim: 3, inputLength: 6, maskZero: true, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 1 }) }),
      tf.layers.lstm({ units: 4, kernelInitializer: glorot(2), recurrentInitializer: glorot(5) }),
      tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: glorot(3) }),
    ],
  });
}

/** 32 sequences of 6 ids, 2 to 6 of them real and the rest 0 in front; one-hot labels of 3 classes. */
export function paddedIds(): { x: tf.Tensor2D; y: tf.Tensor2D } {
  const ids = Array.from({ length: 32 }, (_, i) => {
    const len = 2 + (i % 5);
    return Array.from({ length: 6 }, (_, t) => (t < 6 - len ? 0 : 1 + ((i * 7 + t * 3) % 9)));
  });
  const y = Array.from({ length: 32 }, (_, i) => [0, 1, 2].map((k) => (k === i % 3 ? 1 : 0)));
  return { x: tf.tensor2d(ids), y: tf.tensor2d(y) };
}

/** LSTM(4, returnSequences) over sequences of any length (`inputShape: [null, 3]`) -> Dense(2) at each step. */
export function anyLengthLstm(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.lstm({ units: 4, returnSequences: true, inputShape: [null, 3], kernelInitializer: glorot(2), recurrentInitializer: glorot(5) }),
      tf.layers.dense({ units: 2, kernelInitializer: glorot(3) }),
    ],
  });
}

/** A GAN's two models: a generator of 2-number samples from 3 numbers of noise, and a discriminator, with the combined model through the discriminator frozen. */
export function gan(): { generator: tf.LayersModel; discriminator: tf.LayersModel; combined: tf.LayersModel } {
  const z = tf.input({ shape: [3] });
  const g = tf.layers.dense({ units: 2, kernelInitializer: glorot(11) }).apply(
    tf.layers.dense({ units: 6, activation: "relu", kernelInitializer: glorot(10) }).apply(z),
  ) as tf.SymbolicTensor;
  const generator = tf.model({ inputs: z, outputs: g });
  const s = tf.input({ shape: [2] });
  const d = tf.layers.dense({ units: 1, activation: "sigmoid", kernelInitializer: glorot(13) }).apply(
    tf.layers.dense({ units: 6, activation: "relu", kernelInitializer: glorot(12) }).apply(s),
  ) as tf.SymbolicTensor;
  const discriminator = tf.model({ inputs: s, outputs: d });
  const noise = tf.input({ shape: [3] });
  const combined = tf.model({ inputs: noise, outputs: discriminator.apply(generator.apply(noise)) as tf.SymbolicTensor });
  return { generator, discriminator, combined };
}
