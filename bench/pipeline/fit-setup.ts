import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type ClusterBuilder, type Dataset } from "../../sdk/index";
import { buildDemoModel } from "../../sdk/cli/models";

/** What one pipeline-benchmark fit runs: the strategy, its shape and the model. */
export interface FitSetup {
  strategy: "data" | "model" | "pipeline" | "hybrid";
  workers: number;
  stages: number;
  microBatches: number;
  schedule: "gpipe" | "1f1b";
  /** "deep": 8 equal dense layers (512 wide), so that stages are equal as the theory assumes; "cnn": the demo's MNIST CNN. */
  model: "deep" | "cnn";
  batch: number;
  steps: number;
}

/** Parses `<strategy> <workers> <stages> <microBatches> <schedule> <model> <batch> <steps>`. */
export function setupFromArgs(argv: readonly string[]): FitSetup {
  const [strategy, workers, stages, micro, schedule, model, batch, steps] = argv;
  if (!["data", "model", "pipeline", "hybrid"].includes(strategy ?? "")) throw new Error(`unknown strategy ${strategy}`);
  return {
    strategy: strategy as FitSetup["strategy"],
    workers: Number(workers),
    stages: Number(stages),
    microBatches: Number(micro),
    schedule: schedule as FitSetup["schedule"],
    model: model as FitSetup["model"],
    batch: Number(batch),
    steps: Number(steps),
  };
}

/** Eight identical 512-wide dense layers: any contiguous split into 2 or 4 stages is balanced. */
function deep(): tf.LayersModel {
  return tf.sequential({
    name: "deep_mlp",
    layers: [
      ...Array.from({ length: 8 }, (_, i) =>
        tf.layers.dense({ units: 512, activation: "relu", ...(i === 0 ? { inputShape: [512] } : {}), kernelInitializer: tf.initializers.glorotUniform({ seed: i }) }),
      ),
    ],
  });
}

/** The model, its synthetic data (fed by the driver), its loss and the cluster builder the setup describes. */
export function fitParts(s: FitSetup): { model: tf.LayersModel; data: Dataset; loss: "meanSquaredError" | "categoricalCrossentropy"; builder: ClusterBuilder } {
  const size = s.batch * s.steps;
  // The deep model regresses onto random targets: only the step's speed matters here.
  const data =
    s.model === "deep"
      ? datasets.fromTensors(tf.randomNormal([size, 512], 0, 1, "float32", 1), tf.randomNormal([size, 512], 0, 1, "float32", 2), "random")
      : datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size, seed: 1 });
  const b = cluster().workers(s.workers);
  const builder =
    s.strategy === "data"
      ? b.strategy("data")
      : s.strategy === "model"
        ? b.strategy("model")
        : s.strategy === "pipeline"
          ? b.strategy("pipeline", { microBatches: s.microBatches, schedule: s.schedule })
          : b.strategy("hybrid", { stages: s.stages, microBatches: s.microBatches, schedule: s.schedule });
  return { model: s.model === "deep" ? deep() : buildDemoModel("cnn"), data, loss: s.model === "deep" ? "meanSquaredError" : "categoricalCrossentropy", builder };
}
