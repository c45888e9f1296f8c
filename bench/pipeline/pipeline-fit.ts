import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type ClusterBuilder } from "../../sdk/index";
import { buildDemoModel } from "../../sdk/cli/models";

/**
 * One run of the pipeline benchmark: a local cluster trains with the strategy given, on
 * synthetic data fed by the driver; prints the plan's prediction beside the run's measures.
 *
 * usage: node pipeline-fit.js <strategy> <workers> <stages> <microBatches> <schedule> <model> <batch> <steps>
 *   model "deep": 8 equal dense layers (512 wide), so that stages are equal as the theory assumes;
 *   model "cnn": the demo's MNIST CNN.
 */

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

async function main(): Promise<void> {
  const [strategy, workersArg, stagesArg, microArg, schedule, model, batchArg, stepsArg] = process.argv.slice(2) as [string, string, string, string, "gpipe" | "1f1b", "deep" | "cnn", string, string];
  const workers = Number(workersArg);
  const stages = Number(stagesArg);
  const microBatches = Number(microArg);
  const batch = Number(batchArg);
  const steps = Number(stepsArg);
  tf.enableProdMode();
  const m = model === "deep" ? deep() : buildDemoModel("cnn");
  const inputShape = model === "deep" ? [512] : [28, 28, 1];
  // The deep model regresses onto random targets: only the step's speed matters here.
  const data =
    model === "deep"
      ? datasets.fromTensors(tf.randomNormal([batch * steps, 512], 0, 1, "float32", 1), tf.randomNormal([batch * steps, 512], 0, 1, "float32", 2), "random")
      : datasets.synthetic({ inputShape, classes: 10, size: batch * steps, seed: 1 });
  let b: ClusterBuilder = cluster().workers(workers);
  if (strategy === "data") b = b.strategy("data");
  else if (strategy === "model") b = b.strategy("model");
  else if (strategy === "pipeline") b = b.strategy("pipeline", { microBatches, schedule });
  else if (strategy === "hybrid") b = b.strategy("hybrid", { stages, microBatches, schedule });
  else throw new Error(`unknown strategy ${strategy}`);
  const c = await b.launch();
  try {
    const loss = model === "deep" ? "meanSquaredError" : "categoricalCrossentropy";
    const run = await c.fit(m, data, { epochs: 1, batchSize: batch, optimizer: { name: "sgd", learningRate: 0.001 }, shuffle: false, loss });
    const s = run.summary();
    const p = run.plan.prediction;
    process.stdout.write(
      `${JSON.stringify({
        strategy,
        workers,
        stages: run.plan.strategy === "data" || run.plan.strategy === "ps" ? 1 : run.plan.stages,
        microBatches: run.plan.strategy === "data" || run.plan.strategy === "ps" ? 1 : run.plan.microBatches,
        schedule: run.plan.strategy === "data" || run.plan.strategy === "ps" ? null : run.plan.schedule.name,
        model,
        batch,
        measuredSamplesPerSecond: s.samplesPerSecond,
        measuredStepMs: s.medianStepMs,
        measuredBubble: s.bubble,
        predictedSamplesPerSecond: p?.samplesPerSecond ?? null,
        predictedStepMs: p?.stepMs ?? null,
        predictedBubble: p?.bubble ?? null,
        basis: p?.basis ?? null,
      })}\n`,
    );
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
