import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type StrategyInput } from "../../sdk/index";
import { buildDemoModel, isDemoModel } from "../../sdk/cli/models";
import { bigMlp } from "../scaling/big-mlp";
import { median } from "../common";
import { throughput } from "../../sdk/metrics/throughput";

/**
 * meshtrain's side of the shaped-link benchmark, run on the driver's host: waits on its join
 * port for the workers (started on their hosts with `meshtrain worker --join`), trains with data
 * parallelism as `variant` says, and prints samples/s after warm-up, the bytes a worker sent per
 * step and the plan's prediction (made from the ring probe over the same links and the
 * replica's step fit() times on a worker before it trains).
 *
 * variant: float32 | websocket (float32 over the WebSocket links) | fp16 | bf16 | powersgd-<rank> | sync-<every>
 * | ps-sync | ps-async (strategy "ps" with one server, already listening at PS_URL; the driver feeds the data)
 * usage: node meshtrain-join.js <model> <workers> <batchPerWorker> <steps> <variant> <host> <port>   (MESHTRAIN_TOKEN set)
 */
export function dataOptions(variant: string): StrategyInput<"data"> {
  if (variant === "fp16" || variant === "bf16") return { compression: variant };
  const power = /^powersgd-(\d+)$/.exec(variant);
  if (power) return { compression: { name: "powersgd", rank: Number(power[1]) } };
  const sync = /^sync-(\d+)$/.exec(variant);
  if (sync) return { sync: { every: Number(sync[1]), outer: { name: "momentum", learningRate: 0.7, momentum: 0.9, useNesterov: true } } };
  return {};
}

async function main(): Promise<void> {
  const [model, workersArg, batchArg, stepsArg, variant, host, port] = process.argv.slice(2) as [string, string, string, string, string, string, string];
  const workers = Number(workersArg);
  const batch = Number(batchArg) * workers;
  // A sync-H run is measured over whole sync periods after the first, which warms up: over a few
  // steps the epoch's closing sync falls inside the window, as if H were smaller (the 11.4M MLP's
  // 14 steps at H = 8 made 2 syncs in the 11 steps measured).
  const every = Number(/^sync-(\d+)$/.exec(variant)?.[1] ?? 0);
  const steps = every > 0 ? every * Math.max(3, Math.ceil(Number(stepsArg) / every)) : Number(stepsArg);
  tf.enableProdMode();
  const data = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
  const base = cluster().join({ workers, host, port: Number(port), timeoutMs: 120_000 }).token(process.env.MESHTRAIN_TOKEN!);
  const ps = /^ps-(sync|async)$/.exec(variant);
  const c = await (ps
    ? base.ps([process.env.PS_URL!]).strategy("ps", { mode: ps[1] as "sync" | "async" })
    : base.strategy("data", { feed: "workers", ...dataOptions(variant) }).dataPlane(variant === "websocket" ? "websocket" : "auto")
  ).launch();
  try {
    const m = isDemoModel(model) ? buildDemoModel(model) : bigMlp();
    // One epoch of `steps` batches: a sync variant syncs every H steps and once more at the end.
    const run = await c.fit(m, data, { batchSize: batch, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false, epochs: 1 });
    const s = run.summary();
    const warm = every > 0 ? every : s.warmupSteps;
    const sent = run.history.slice(warm).map((st) => st.workers[0]?.sentBytes ?? 0);
    const p = run.plan.prediction;
    // The slowest worker's median compute, beside the plan's: which of the step's parts a miss is in.
    const computeMs = Math.max(...s.workers.map((w) => w.computeMs));
    process.stdout.write(`${JSON.stringify({ peer: "meshtrain", model, variant, dataPlane: run.dataPlane?.path ?? null, world: workers, batch_per_rank: batch / workers, samples_per_second: throughput(run.history, warm), predicted_samples_per_second: p?.samplesPerSecond ?? null, predicted_timed: p?.timed ?? false, predicted_compute_ms: p?.computeMs ?? null, compute_ms: computeMs, sent_bytes_per_step: sent.reduce((a, b) => a + b, 0) / Math.max(1, sent.length), median_sent_bytes: median(sent), median_step_ms: s.medianStepMs })}\n`);
  } finally {
    await c.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
