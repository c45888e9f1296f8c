import * as tf from "@tensorflow/tfjs";
import { cluster } from "../cluster/builder";
import { datasets } from "../data/index";
import type { BackendChoice } from "../protocol/backend-names";
import { selectBackend } from "../backends/select-backend";
import { buildDemoModel, type DemoModel } from "./models";

export interface DemoOptions {
  workers: number;
  epochs: number;
  batchSize: number;
  backend: BackendChoice;
  model: DemoModel;
  learningRate: number;
  /** Wait for `workers` workers to join here instead of starting them (e.g. pods in Kubernetes). */
  join?: { host: string; port: number; token: string; timeoutMs: number };
}

/**
 * The main job: a local cluster of CPU workers trains a model on real MNIST digits with
 * synchronous data parallelism, then the driver measures accuracy on held-out digits.
 */
export async function runDemo(o: DemoOptions): Promise<{ accuracy: number; samplesPerSecond: number }> {
  // The driver evaluates the held-out digits itself: on the best backend here, as the workers do.
  tf.enableProdMode();
  await selectBackend("auto", 1);
  const train = datasets.mnist({ split: "train" });
  const test = datasets.mnist({ split: "test" });
  const out = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  out(`meshtrain demo: ${o.model.toUpperCase()} on MNIST (${train.size} training digits, ${test.size} held out)`);
  const j = o.join;
  const workers =
    j === undefined
      ? cluster().workers(o.workers).backend(o.backend)
      : cluster().join({ workers: o.workers, host: j.host, port: j.port, timeoutMs: j.timeoutMs }).token(j.token);
  out(
    j === undefined
      ? `starting ${o.workers} local worker(s), strategy "data", backend "${o.backend}"...`
      : `waiting for ${o.workers} worker(s) to join at ws://${j.host}:${j.port}, strategy "data"...`,
  );
  const builder = workers.strategy("data");
  const model = buildDemoModel(o.model);
  const c = await builder.launch();
  try {
    out(String(c));
    const fit = {
      epochs: o.epochs,
      batchSize: o.batchSize,
      optimizer: { name: "adam" as const, learningRate: o.learningRate, beta1: 0.9, beta2: 0.999 },
      loss: "categoricalCrossentropy" as const,
      shuffle: true,
      seed: 7,
      progress: true,
    };
    // Timed first, as the fit would be: the plan shown is the one the fit runs, with its one prediction.
    await c.profile(model, fit);
    out(String(c.plan(model, { batchSize: fit.batchSize, optimizer: fit.optimizer, loss: fit.loss })));
    const run = await c.fit(model, train, fit);
    const { x, y } = test.toTensors();
    const accuracy = tf.tidy(
      () =>
        tf.metrics
          .categoricalAccuracy(y, model.predict(x) as tf.Tensor)
          .mean()
          .dataSync()[0]!,
    );
    tf.dispose([x, y]);
    out("");
    out(String(run));
    out(`held-out accuracy: ${(accuracy * 100).toFixed(2)}% on ${test.size} digits the workers never saw`);
    return { accuracy, samplesPerSecond: run.summary().samplesPerSecond };
  } finally {
    await c.close();
  }
}
