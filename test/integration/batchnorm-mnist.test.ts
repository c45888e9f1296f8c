import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { rng } from "../../sdk/data/random";
import { nativeAvailable } from "../helpers/backends";
import { mnistBatchNormCnn } from "../helpers/stateful-models";

/**
 * A convolutional net with BatchNormalization and Dropout, as users bring them, on real MNIST
 * digits: trained by meshtrain it reaches the held-out accuracy model.fit reaches in one process
 * on the same data and options, within one point, under data parallelism and a 2-stage pipeline
 * (whose stages hold a BatchNormalization each). Sync parameter servers, which hold the moving
 * statistics, are held to the reference's weights and statistics in stateful-layers.test.
 * (Dropout masks differ between the runs, so equality is not expected; one point is. One run of
 * model.fit varies by about a point with its shuffle and dropout, so the accuracy to reach is the
 * median of three, each made repeatable by seeding the Math.random both draw from.)
 */

tf.enableProdMode();
nativeAvailable();
tf.setBackend("native");
// 2000 digits in batches of 32: as many steps as 4000 in batches of 64, at half the arithmetic.
const train = datasets.mnist({ split: "train", limit: 2000 });
const held = datasets.mnist({ split: "test", limit: 2000 }).toTensors();
const options = { epochs: 3, batchSize: 32, seed: 3 };

function accuracy(model: tf.LayersModel): number {
  return tf.tidy(() => {
    const predicted = (model.predict(held.x) as tf.Tensor).argMax(-1);
    return (tf.mean(tf.cast(tf.equal(predicted, held.y.argMax(-1)), "float32")).dataSync()[0]!) * 100;
  });
}

function compiled(): tf.LayersModel {
  const m = mnistBatchNormCnn();
  m.compile({ optimizer: tf.train.adam(0.003), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  return m;
}

let reference = 0;

/** Math.random replaced by the SDK's seeded generator for the duration of `fn`. */
async function withSeededRandom<T>(seed: number, fn: () => Promise<T>): Promise<T> {
  const original = Math.random;
  Math.random = rng(seed);
  try {
    return await fn();
  } finally {
    Math.random = original;
  }
}

test("model.fit in one process: the accuracy to reach (the median of three seeded runs)", async (t) => {
  const { x, y } = train.toTensors();
  const runs: number[] = [];
  for (const seed of [1, 2, 3]) {
    runs.push(
      await withSeededRandom(seed, async () => {
        const m = compiled();
        await m.fit(x, y, { ...options, shuffle: true, verbose: 0 });
        return accuracy(m);
      }),
    );
  }
  reference = [...runs].sort((a, b) => a - b)[1]!;
  t.diagnostic(`model.fit: ${runs.map((r) => r.toFixed(2)).join(", ")}%; median ${reference.toFixed(2)}%`);
  assert.ok(reference > 85, `model.fit reached ${reference.toFixed(1)}%`);
});

for (const setup of [
  { name: "data, 2 workers", build: () => cluster().workers(2).strategy("data") },
  { name: "pipeline, 2 stages", build: () => cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }) },
]) {
  test(`${setup.name}: within one point of model.fit's held-out accuracy`, async (t) => {
    const c = await setup.build().launch();
    try {
      const m = compiled();
      const run = await c.fit(m, train, options);
      const acc = accuracy(m);
      t.diagnostic(`${setup.name}: ${acc.toFixed(2)}% vs model.fit ${reference.toFixed(2)}%; epochs ${JSON.stringify(run.byEpoch.history.acc?.map((a) => a.toFixed(3)))}`);
      assert.ok(acc >= reference - 1, `${acc.toFixed(2)}% is more than one point below model.fit's ${reference.toFixed(2)}%`);
      assert.equal(run.byEpoch.history.acc?.length, 3, "the compiled accuracy per epoch");
    } finally {
      await c.close();
    }
  });
}
