import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { buildDemoModel } from "../../sdk/cli/models";
import { median } from "../common";

/**
 * The accuracy side of the compression benchmark: the demo's CNN trained on the 8,000 MNIST
 * training digits by 2 local workers (data parallelism, or sync parameter servers with one
 * server), gradients as float32 or 16-bit with error feedback; prints the held-out accuracy
 * on the 2,000 test digits, samples/s and the bytes a worker sent per step.
 *
 * usage: node mnist-fit.js <data|ps> <float32|fp16|bf16> <epochs> <seed> [trainingDigits]
 * (the --quick smoke run trains on fewer digits: it checks the benchmark runs, not its accuracy)
 */
async function main(): Promise<void> {
  const [strategy, format, epochsArg, seedArg, limitArg] = process.argv.slice(2) as [string, string, string, string, string?];
  const compression = format === "fp16" || format === "bf16" ? format : undefined;
  tf.enableProdMode();
  const train = datasets.mnist({ split: "train", ...(limitArg ? { limit: Number(limitArg) } : {}) });
  const test = datasets.mnist({ split: "test" });
  const builder = strategy === "ps" ? cluster().workers(2).ps(1).strategy("ps", { mode: "sync", ...(compression ? { compression } : {}) }) : cluster().workers(2).strategy("data", compression ? { compression } : {});
  const c = await builder.launch();
  try {
    const model = buildDemoModel("cnn");
    const run = await c.fit(model, train, { epochs: Number(epochsArg), batchSize: 64, optimizer: { name: "adam", learningRate: 0.001 }, loss: "categoricalCrossentropy", shuffle: true, seed: Number(seedArg) });
    const { x, y } = test.toTensors();
    const accuracy = tf.tidy(() => tf.metrics.categoricalAccuracy(y, model.predict(x) as tf.Tensor).mean().dataSync()[0]!);
    tf.dispose([x, y]);
    const s = run.summary();
    const sent = run.history.slice(s.warmupSteps).map((st) => st.workers[0]?.sentBytes ?? 0);
    process.stdout.write(`${JSON.stringify({ strategy, compression: format, seed: Number(seedArg), accuracy, samples_per_second: s.samplesPerSecond, sent_bytes: median(sent), params: model.countParams() })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
