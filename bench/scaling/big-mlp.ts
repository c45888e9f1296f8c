import * as tf from "@tensorflow/tfjs";

/** An MLP on MNIST-shaped input: ReLU layers of `hidden` units, then softmax over 10; layer k's weights seeded `seed + k`. */
function mnistMlp(hidden: readonly number[], seed: number): tf.LayersModel {
  const init = (k: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed: seed + k });
  return tf.sequential({
    layers: [
      tf.layers.flatten({ inputShape: [28, 28, 1] }),
      ...hidden.map((units, k) => tf.layers.dense({ units, activation: "relu", kernelInitializer: init(k) })),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(hidden.length) }),
    ],
  });
}

/** 784-3000-3000-10, 11.4M parameters: the size of model whose all-reduce outweighs the compute it splits. */
export function bigMlp(): tf.LayersModel {
  return mnistMlp([3000, 3000], 42);
}

/** 784-1024-1024-10, 1.9M parameters: a 7.4 MB all-reduce against a step of a few milliseconds. */
export function wideMlp(): tf.LayersModel {
  return mnistMlp([1024, 1024], 62);
}

/** 784-1200x8-10, 11.0M parameters in eight layers of 1.4M at most: a model no one layer dominates. */
export function deepMlp(): tf.LayersModel {
  return mnistMlp(Array<number>(8).fill(1200), 52);
}
