import * as tf from "@tensorflow/tfjs";

/** The models the CLI's demo and plan commands build: ordinary single-device TF.js models. */
export const DEMO_MODELS = ["mlp"] as const;
export type DemoModel = (typeof DEMO_MODELS)[number];

export function buildDemoModel(name: DemoModel, seed = 42): tf.LayersModel {
  switch (name) {
    case "mlp":
      return tf.sequential({
        name: "mnist_mlp",
        layers: [
          tf.layers.flatten({ inputShape: [28, 28, 1] }),
          tf.layers.dense({ units: 128, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed }) }),
          tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
        ],
      });
  }
}
