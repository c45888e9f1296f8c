import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { buildDemoModel, isDemoModel } from "../../sdk/cli/models";
import { median } from "../common";
import { bigMlp, wideMlp } from "./big-mlp";

/**
 * meshtrain's side of the scaling benchmark: a local cluster of N workers trains with data
 * parallelism, per-worker batch fixed, synthetic MNIST-shaped data fed by the driver (FEED=workers:
 * read by the workers, as DDP's ranks hold theirs), all-reduce over the native data plane
 * (DATA_PLANE=websocket: the WebSocket links), gradients as float32 (COMPRESSION=fp16|bf16:
 * 16-bit, with error feedback), overlap as the plan chooses it (OVERLAP=on|off: as asked). Prints samples/s after warm-up, as the run summary measures it,
 * and the bytes a worker sent per step.
 *
 * usage: node meshtrain-fit.js <model> <workers> <batchPerWorker> <steps>
 */
async function main(): Promise<void> {
  const [model, workersArg, batchArg, stepsArg] = process.argv.slice(2) as [string, string, string, string];
  const workers = Number(workersArg);
  const batch = Number(batchArg) * workers;
  const steps = Number(stepsArg);
  tf.enableProdMode();
  const data = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
  const plane = process.env.DATA_PLANE === "websocket" ? "websocket" : "auto";
  const compression = process.env.COMPRESSION === "fp16" || process.env.COMPRESSION === "bf16" ? process.env.COMPRESSION : undefined;
  const overlap = process.env.OVERLAP === "on" ? true : process.env.OVERLAP === "off" ? false : "auto";
  const c = await cluster().workers(workers).strategy("data", { feed: process.env.FEED === "workers" ? "workers" : "driver", overlap, ...(compression ? { compression } : {}) }).dataPlane(plane).launch();
  try {
    const run = await c.fit(isDemoModel(model) ? buildDemoModel(model) : model === "mlp1m" ? wideMlp() : bigMlp(), data, { epochs: 1, batchSize: batch, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
    const s = run.summary();
    const sent = run.history.slice(s.warmupSteps).map((st) => st.workers[0]?.sentBytes ?? 0);
    process.stdout.write(`${JSON.stringify({ peer: "meshtrain", model, dataPlane: run.dataPlane?.path ?? null, feed: process.env.FEED ?? "driver", world: workers, batch_per_rank: batch / workers, backend: s.workers[0]?.backend, compression: compression ?? "float32", overlap: run.plan.strategy === "data" ? (run.overlapTrial?.kept ?? run.plan.overlap.on) : false, overlap_trial: run.overlapTrial ?? null, samples_per_second: s.samplesPerSecond, sent_bytes: median(sent), median_step_ms: s.medianStepMs, worker_compute_ms: s.workers.map((w) => w.computeMs), worker_comm_ms: s.workers.map((w) => w.commMs), worker_wait_ms: s.workers.map((w) => w.waitMs) })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
