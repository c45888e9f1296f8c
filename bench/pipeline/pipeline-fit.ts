import * as tf from "@tensorflow/tfjs";
import { fitParts, setupFromArgs } from "./fit-setup";

/**
 * One run of the pipeline benchmark: a local cluster trains with the strategy given, on
 * synthetic data fed by the driver; prints the plan's prediction beside the run's measures.
 *
 * usage: node pipeline-fit.js <strategy> <workers> <stages> <microBatches> <schedule> <model> <batch> <steps>
 *   model "deep": 8 equal dense layers (512 wide), so that stages are equal as the theory assumes;
 *   model "cnn": the demo's MNIST CNN.
 */

async function main(): Promise<void> {
  const setup = setupFromArgs(process.argv.slice(2));
  const { strategy, workers, model, batch } = setup;
  tf.enableProdMode();
  const { model: m, data, loss, builder } = fitParts(setup);
  const c = await builder.launch();
  try {
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
