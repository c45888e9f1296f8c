import * as tf from "@tensorflow/tfjs";

/** 784-3000-3000-10, 11.4M parameters: the size of model whose all-reduce outweighs the compute it splits. */
export function bigMlp(): tf.LayersModel {
  const init = (k: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed: 42 + k });
  return tf.sequential({
    layers: [
      tf.layers.flatten({ inputShape: [28, 28, 1] }),
      tf.layers.dense({ units: 3000, activation: "relu", kernelInitializer: init(0) }),
      tf.layers.dense({ units: 3000, activation: "relu", kernelInitializer: init(1) }),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(2) }),
    ],
  });
}

/** 784-1024-1024-10, 1.9M parameters: a 7.4 MB all-reduce against a step of a few milliseconds. */
export function wideMlp(): tf.LayersModel {
  const init = (k: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed: 62 + k });
  return tf.sequential({
    layers: [
      tf.layers.flatten({ inputShape: [28, 28, 1] }),
      tf.layers.dense({ units: 1024, activation: "relu", kernelInitializer: init(0) }),
      tf.layers.dense({ units: 1024, activation: "relu", kernelInitializer: init(1) }),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(2) }),
    ],
  });
}

/** 784-1200x8-10, 11.0M parameters in eight layers of 1.4M at most: a model no one layer dominates. */
export function deepMlp(): tf.LayersModel {
  const init = (k: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed: 52 + k });
  return tf.sequential({
    layers: [
      tf.layers.flatten({ inputShape: [28, 28, 1] }),
      ...Array.from({ length: 8 }, (_, k) => tf.layers.dense({ units: 1200, activation: "relu", kernelInitializer: init(k) })),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(8) }),
    ],
  });
}
