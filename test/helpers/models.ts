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

/** ||a - b|| / ||b|| for every weight tensor, the largest of them. */
export function maxRelativeDifference(a: tf.LayersModel, b: tf.LayersModel): number {
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
    worst = Math.max(worst, Math.sqrt(diff) / Math.max(Math.sqrt(norm), 1e-12));
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
