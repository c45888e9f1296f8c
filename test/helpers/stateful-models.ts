import * as tf from "@tensorflow/tfjs";

/**
 * A seeded classifier with BatchNormalization between its dense layers: the same every time it
 * is built. The dense layers before a normalization have no bias, as usual (the normalization
 * cancels it, so its gradient is rounding noise that no relative comparison can hold to).
 */
export function batchNormClassifier(inputs = 6, classes = 3, seed = 1): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ units: 8, inputShape: [inputs], useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed }) }),
      tf.layers.batchNormalization({ momentum: 0.8 }),
      tf.layers.activation({ activation: "relu" }),
      tf.layers.dense({ units: 8, useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
      tf.layers.batchNormalization({ momentum: 0.9, center: true, scale: true }),
      tf.layers.activation({ activation: "relu" }),
      tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
    ],
  });
}

/** A small MNIST convolutional net with BatchNormalization and Dropout, as users bring them. */
export function mnistBatchNormCnn(seed = 1): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [28, 28, 1], filters: 8, kernelSize: 3, useBias: false, kernelInitializer: tf.initializers.heNormal({ seed }) }),
      tf.layers.batchNormalization({ momentum: 0.9 }),
      tf.layers.activation({ activation: "relu" }),
      tf.layers.maxPooling2d({ poolSize: 2 }),
      tf.layers.conv2d({ filters: 16, kernelSize: 3, useBias: false, kernelInitializer: tf.initializers.heNormal({ seed: seed + 1 }) }),
      tf.layers.batchNormalization({ momentum: 0.9 }),
      tf.layers.activation({ activation: "relu" }),
      tf.layers.maxPooling2d({ poolSize: 2 }),
      tf.layers.flatten(),
      tf.layers.dropout({ rate: 0.25 }),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
    ],
  });
}

/** batchNormClassifier's layers wired with tf.model: a functional chain, seeded the same way. */
export function functionalChain(inputs = 6, classes = 3, seed = 1): tf.LayersModel {
  const input = tf.input({ shape: [inputs] });
  let h = tf.layers.dense({ units: 8, useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed }) }).apply(input) as tf.SymbolicTensor;
  h = tf.layers.batchNormalization({ momentum: 0.8 }).apply(h) as tf.SymbolicTensor;
  h = tf.layers.activation({ activation: "relu" }).apply(h) as tf.SymbolicTensor;
  h = tf.layers.dense({ units: 8, useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }).apply(h) as tf.SymbolicTensor;
  h = tf.layers.batchNormalization({ momentum: 0.9 }).apply(h) as tf.SymbolicTensor;
  h = tf.layers.activation({ activation: "relu" }).apply(h) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }).apply(h) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: out, name: "functional_chain" });
}

/** A functional model with a residual connection (a branch and a merge), seeded. */
export function residualClassifier(inputs = 6, classes = 3, seed = 1): tf.LayersModel {
  const input = tf.input({ shape: [inputs] });
  const h = tf.layers.dense({ units: inputs, activation: "tanh", kernelInitializer: tf.initializers.glorotUniform({ seed }), name: "residual_dense" }).apply(input) as tf.SymbolicTensor;
  const sum = tf.layers.add({ name: "residual_add" }).apply([input, h]) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }).apply(sum) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: out, name: "residual" });
}
