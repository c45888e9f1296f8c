import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { buildDemoModel } from "../../sdk/cli/models";
import { dataOptions } from "./meshtrain-join";

/**
 * The accuracy side of the shaped-link benchmark, run on the driver's host: the demo's CNN
 * trained on the 8,000 MNIST training digits (Adam 0.001, 64 a worker a step) by workers that
 * join over the shaped links, with data parallelism as `variant` says (see meshtrain-join.ts);
 * prints the held-out accuracy on the 2,000 test digits, the fit's wall time and the bytes a
 * worker sent over the fit.
 *
 * usage: node mnist-join.js <workers> <epochs> <seed> <variant> <host> <port>   (MESHTRAIN_TOKEN set)
 */
async function main(): Promise<void> {
  const [workersArg, epochsArg, seedArg, variant, host, port] = process.argv.slice(2) as [string, string, string, string, string, string];
  const workers = Number(workersArg);
  tf.enableProdMode();
  const train = datasets.mnist({ split: "train" });
  const test = datasets.mnist({ split: "test" });
  const c = await cluster()
    .join({ workers, host, port: Number(port), timeoutMs: 120_000 })
    .token(process.env.MESHTRAIN_TOKEN!)
    .strategy("data", { feed: "workers", ...dataOptions(variant) })
    .launch();
  try {
    const model = buildDemoModel("cnn");
    const run = await c.fit(model, train, { epochs: Number(epochsArg), batchSize: 64 * workers, optimizer: { name: "adam", learningRate: 0.001 }, loss: "categoricalCrossentropy", shuffle: true, seed: Number(seedArg) });
    const { x, y } = test.toTensors();
    const accuracy = tf.tidy(() => tf.metrics.categoricalAccuracy(y, model.predict(x) as tf.Tensor).mean().dataSync()[0]!);
    tf.dispose([x, y]);
    const sent = run.history.reduce((a, st) => a + (st.workers[0]?.sentBytes ?? 0), 0);
    process.stdout.write(`${JSON.stringify({ variant, seed: Number(seedArg), accuracy, wall_ms: run.wallMs, sent_bytes: sent, steps: run.history.length })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
