import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type ClusterBuilder } from "../../sdk/index";
import { buildDemoModel } from "../../sdk/cli/models";

/**
 * One run of the parameter-server benchmark: a local cluster trains the demo's MNIST CNN on
 * synthetic digits fed by the driver, with data parallelism or parameter servers, with or
 * without a straggler; prints what it measured as one JSON line.
 *
 * usage: node ps-fit.js <data|sync|async> <workers> <servers> <straggler factor, 1 = none> <batch> <steps>
 */
async function main(): Promise<void> {
  const [kind, workersArg, serversArg, slowArg, batchArg, stepsArg] = process.argv.slice(2) as [string, string, string, string, string, string];
  const workers = Number(workersArg);
  const slow = Number(slowArg);
  const batch = Number(batchArg);
  const steps = Number(stepsArg);
  tf.enableProdMode();
  let b: ClusterBuilder = cluster().workers(workers);
  if (kind === "data") b = b.strategy("data");
  else if (kind === "sync" || kind === "async") b = b.ps(Number(serversArg)).strategy("ps", { mode: kind });
  else throw new Error(`unknown kind ${kind}`);
  if (slow > 1) b = b.slowdown(0, slow);
  const c = await b.launch();
  try {
    const data = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
    const run = await c.fit(buildDemoModel("cnn"), data, { epochs: 1, batchSize: batch, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false, loss: "categoricalCrossentropy" });
    const s = run.summary();
    const st = run.pushes.map((p) => p.staleness).sort((x, y) => x - y);
    const perRank = Array.from({ length: workers }, (_, r) => run.pushes.filter((p) => p.rank === r).length);
    process.stdout.write(
      `${JSON.stringify({
        kind,
        workers,
        straggler: slow,
        samplesPerSecond: s.samplesPerSecond,
        medianStepMs: s.medianStepMs,
        stalenessMedian: st.length ? st[Math.floor(st.length / 2)] : null,
        stalenessMax: st.length ? st[st.length - 1] : null,
        pushesPerRank: run.pushes.length ? perRank : null,
        backend: run.workers[0]?.info.backend,
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
