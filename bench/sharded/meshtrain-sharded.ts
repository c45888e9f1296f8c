import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { memoryTotal } from "../../sdk/plan/memory";
import { ownBytes } from "../../sdk/metrics/memory-lines";
import { bigMlp, deepMlp } from "../scaling/big-mlp";
import { buildDemoModel } from "../../sdk/cli/models";

/**
 * meshtrain's side of the sharded benchmark: a local cluster of N workers trains the 11.4M MLP
 * (or "mlpdeep", 11.0M in eight layers) with Adam (lr 1e-3) by data parallelism, sharded
 * (SHARD=optimizer: ZeRO stage 1; gradients: stage 2; parameters: stage 3; BUCKET_MB: their bucketMB; OVERLAP=1 or 0: overlap) or not, each worker reading its
 * own synthetic data, over the native data plane
 * (DATA_PLANE=websocket: the WebSocket links). Prints samples/s after warm-up, each worker's
 * measured memory (its resident set without a model, its peak during the fit) and the plan's
 * estimate of what a replica holds.
 *
 * usage: node meshtrain-sharded.js <workers> <batchPerWorker> <steps> [mlp10m|mlpdeep|mlp]
 * ("mlp", the demo's 784-256-256-10, is what the --quick smoke run trains)
 */
async function main(): Promise<void> {
  const [workersArg, batchArg, stepsArg, model = "mlp10m"] = process.argv.slice(2) as [string, string, string, string?];
  const workers = Number(workersArg);
  const batch = Number(batchArg) * workers;
  const steps = Number(stepsArg);
  tf.enableProdMode();
  const data = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
  const shard = process.env.SHARD === "optimizer" || process.env.SHARD === "gradients" || process.env.SHARD === "parameters" ? process.env.SHARD : undefined;
  const c = await cluster()
    .workers(workers)
    .strategy("data", { feed: "workers", ...(shard ? { shard } : {}), ...(process.env.BUCKET_MB !== undefined && shard !== "optimizer" && shard ? { bucketMB: Number(process.env.BUCKET_MB) } : {}), ...(process.env.OVERLAP ? { overlap: process.env.OVERLAP === "1" } : {}) })
    .dataPlane(process.env.DATA_PLANE === "websocket" ? "websocket" : "auto")
    .launch();
  try {
    const run = await c.fit(model === "mlpdeep" ? deepMlp() : model === "mlp" ? buildDemoModel("mlp") : bigMlp(), data, { epochs: 1, batchSize: batch, optimizer: { name: "adam", learningRate: 1e-3 }, shuffle: false });
    const s = run.summary();
    const estimate = run.plan.strategy === "data" ? memoryTotal(run.plan.memory) : null;
    const memory = run.memory.map((m) => ({ rank: m.rank, idle: m.idleRssBytes, own: ownBytes(m), peak: m.peakRssBytes, tensors: m.tensorBytes, data: m.dataBytes ?? 0, from: m.peakFrom }));
    process.stdout.write(`${JSON.stringify({ peer: "meshtrain", model, shard: shard ?? "none", world: workers, dataPlane: run.dataPlane?.path ?? null, samples_per_second: s.samplesPerSecond, median_step_ms: s.medianStepMs, estimate_bytes: estimate, memory })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
