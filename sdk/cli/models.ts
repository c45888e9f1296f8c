import * as fs from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { ConfigError } from "../errors/errors";

/**
 * The models the CLI's demo and plan commands and the benchmarks build: ordinary single-device
 * TF.js models, the same shapes as the PyTorch peer's (bench/peers/torch_train.py).
 */
import { DEMO_MODELS, type DemoModel } from "./names";
export { DEMO_MODELS, type DemoModel } from "./names";

export function buildDemoModel(name: DemoModel, seed = 42): tf.LayersModel {
  const init = (k: number): ReturnType<typeof tf.initializers.glorotUniform> =>
    tf.initializers.glorotUniform({ seed: seed + k });
  switch (name) {
    case "mlp":
      // 784-256-256-10
      return tf.sequential({
        name: "mnist_mlp",
        layers: [
          tf.layers.flatten({ inputShape: [28, 28, 1] }),
          tf.layers.dense({ units: 256, activation: "relu", kernelInitializer: init(0) }),
          tf.layers.dense({ units: 256, activation: "relu", kernelInitializer: init(1) }),
          tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(2) }),
        ],
      });
    case "cnn":
      // conv 3x3x32, max pool, conv 3x3x64, max pool, dense 128, dense 10
      return tf.sequential({
        name: "mnist_cnn",
        layers: [
          tf.layers.conv2d({
            inputShape: [28, 28, 1],
            filters: 32,
            kernelSize: 3,
            activation: "relu",
            kernelInitializer: init(0),
          }),
          tf.layers.maxPooling2d({ poolSize: 2 }),
          tf.layers.conv2d({ filters: 64, kernelSize: 3, activation: "relu", kernelInitializer: init(1) }),
          tf.layers.maxPooling2d({ poolSize: 2 }),
          tf.layers.flatten(),
          tf.layers.dense({ units: 128, activation: "relu", kernelInitializer: init(2) }),
          tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: init(3) }),
        ],
      });
  }
}

export function isDemoModel(name: string): name is DemoModel {
  return (DEMO_MODELS as readonly string[]).includes(name);
}

/**
 * A demo model by name, or the topology in a TF.js/Keras model.json (what model.save() writes;
 * weights are not needed to size a run).
 */
export async function modelFromArg(arg: string): Promise<tf.LayersModel> {
  if (isDemoModel(arg)) return buildDemoModel(arg);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(arg, "utf8"));
  } catch (err) {
    throw new ConfigError(
      `--model ${arg}: neither a demo model (${DEMO_MODELS.join(", ")}) nor a readable model.json (${err instanceof Error ? err.message : String(err)})`,
      { hint: "name a demo model, or the model.json that model.save() wrote for your model" },
    );
  }
  try {
    return await tf.models.modelFromJSON(json as tf.io.ModelJSON);
  } catch (err) {
    throw new ConfigError(
      `--model ${arg}: TF.js cannot build a model from it (${err instanceof Error ? err.message : String(err)})`,
      { hint: "give a TF.js LayersModel's model.json; custom layers need registering, which this command cannot do" },
    );
  }
}
