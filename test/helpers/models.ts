import * as tf from "@tensorflow/tfjs";

/** A small classifier with seeded initial weights: the same every time it is built. */
export function smallClassifier(inputs = 6, classes = 3, options: { l2?: number; seed?: number } = {}): tf.LayersModel {
  const seed = options.seed ?? 1;
  return tf.sequential({
    layers: [
      tf.layers.dense({
        units: 8,
        inputShape: [inputs],
        activation: "relu",
        kernelInitializer: tf.initializers.glorotUniform({ seed }),
        biasInitializer: tf.initializers.randomNormal({ seed: seed + 1, stddev: 0.1 }),
        ...(options.l2 ? { kernelRegularizer: tf.regularizers.l2({ l2: options.l2 }) } : {}),
      }),
      tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
    ],
  });
}

/**
 * ||a - b|| / max(||b||, floor) for every weight tensor, the largest of them. A floor of 1 reads
 * tensors of small norm by their absolute difference: needed where a tensor is rounding noise in
 * exact arithmetic (a bias feeding BatchNormalization gets a zero gradient) and two backends sum
 * in different orders.
 */
export function maxRelativeDifference(a: tf.LayersModel, b: tf.LayersModel, floor = 1e-12): number {
  const wa = a.getWeights();
  const wb = b.getWeights();
  if (wa.length !== wb.length) throw new Error(`weight counts differ: ${wa.length} vs ${wb.length}`);
  let worst = 0;
  wa.forEach((t, i) => {
    const x = t.dataSync();
    const y = wb[i]!.dataSync();
    let diff = 0;
    let norm = 0;
    for (let j = 0; j < x.length; j++) {
      diff += (x[j]! - y[j]!) ** 2;
      norm += y[j]! ** 2;
    }
    worst = Math.max(worst, Math.sqrt(diff) / Math.max(Math.sqrt(norm), floor));
  });
  return worst;
}

export function weightsMoved(before: tf.Tensor[], model: tf.LayersModel): boolean {
  return model.getWeights().some((w, i) => {
    const a = w.dataSync();
    const b = before[i]!.dataSync();
    return a.some((v, j) => v !== b[j]);
  });
}

/** A deeper seeded classifier, to split into stages: `hidden` dense layers of `width` units. */
export function deepClassifier(inputs = 6, classes = 3, options: { hidden?: number; width?: number; l2?: number; seed?: number } = {}): tf.LayersModel {
  const seed = options.seed ?? 1;
  const hidden = options.hidden ?? 4;
  const width = options.width ?? 8;
  const reg = options.l2 ? { kernelRegularizer: tf.regularizers.l2({ l2: options.l2 }) } : {};
  return tf.sequential({
    layers: [
      ...Array.from({ length: hidden }, (_, i) =>
        tf.layers.dense({
          units: width,
          ...(i === 0 ? { inputShape: [inputs] } : {}),
          activation: i % 2 === 0 ? "relu" : "tanh",
          kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 10 * i }),
          biasInitializer: tf.initializers.randomNormal({ seed: seed + 10 * i + 1, stddev: 0.1 }),
          ...reg,
        }),
      ),
      tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1000 }) }),
    ],
  });
}

/** A small seeded convolutional classifier of 8x8 single-channel images, to split into stages. */
export function smallConvNet(classes = 3, seed = 1): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [8, 8, 1], filters: 4, kernelSize: 3, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed }) }),
      tf.layers.maxPooling2d({ poolSize: 2 }),
      tf.layers.conv2d({ filters: 6, kernelSize: 2, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 10, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
      tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 3 }) }),
    ],
  });
}
