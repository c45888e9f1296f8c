import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { buildDemoModel, type DemoModel } from "../../sdk/cli/models";

/**
 * meshtrain's side of the scaling benchmark: a local cluster of N workers trains with data
 * parallelism, per-worker batch fixed, synthetic MNIST-shaped data fed by the driver. Prints
 * samples/s after warm-up, as the run summary measures it.
 *
 * usage: node meshtrain-fit.js <model> <workers> <batchPerWorker> <steps>
 */
async function main(): Promise<void> {
  const [model, workersArg, batchArg, stepsArg] = process.argv.slice(2) as [DemoModel, string, string, string];
  const workers = Number(workersArg);
  const batch = Number(batchArg) * workers;
  const steps = Number(stepsArg);
  tf.enableProdMode();
  const data = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
  const c = await cluster().workers(workers).strategy("data", { feed: process.env.FEED === "workers" ? "workers" : "driver" }).launch();
  try {
    const run = await c.fit(buildDemoModel(model), data, { epochs: 1, batchSize: batch, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
    const s = run.summary();
    process.stdout.write(`${JSON.stringify({ peer: "meshtrain", model, world: workers, batch_per_rank: batch / workers, backend: s.workers[0]?.backend, samples_per_second: s.samplesPerSecond, median_step_ms: s.medianStepMs, worker_compute_ms: s.workers.map((w) => w.computeMs), worker_comm_ms: s.workers.map((w) => w.commMs), worker_wait_ms: s.workers.map((w) => w.waitMs) })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
