import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets } from "../../sdk/index";
import { maxRelativeDifference } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { slicedReference } from "../helpers/sliced-reference";
import { batchNormClassifier } from "../helpers/stateful-models";

/**
 * batchNorm "sync": every replica normalizes with the global batch's statistics, so a fit on 2
 * or 3 workers (uneven slices, two BatchNormalization layers; and a CNN whose statistics are
 * per channel over the image) equals model.fit in one process at the global batch: weights and
 * moving statistics. Per-replica statistics (the default) end elsewhere.
 */

tf.enableProdMode();
const TOLERANCE = 1e-5;
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 40, seed: 41 });
const o = { epochs: 2, batchSize: 12, shuffle: true, seed: 3, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, loss: "categoricalCrossentropy" as const };

function smallCnn(seed = 1): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [5, 5, 1], filters: 3, kernelSize: 3, useBias: false, kernelInitializer: tf.initializers.heNormal({ seed }) }),
      tf.layers.batchNormalization({ momentum: 0.8 }),
      tf.layers.activation({ activation: "relu" }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
    ],
  });
}

for (const workers of [2, 3]) {
  test(`${workers} workers, batchNorm "sync": equal to model.fit at the global batch (weights and moving statistics); "replica" is not`, async (t) => {
    const c = await cluster().workers(workers).strategy("data", { batchNorm: "sync" }).backend("cpu").launch();
    try {
      const model = batchNormClassifier();
      const run = await c.fit(model, ds, o);
      assert.deepEqual(run.replicaStep, { native: false, why: 'batchNorm "sync" takes each step in all-reduced rounds, by autodiff' });
      const ref = batchNormClassifier();
      await modelFitReference(ref, ds, o);
      const diff = maxRelativeDifference(model, ref);
      t.diagnostic(`largest relative difference from model.fit at the global batch: ${diff.toExponential(2)}`);
      assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
      // The default normalizes each slice by its own statistics: the same fit ends elsewhere.
      const perSlice = batchNormClassifier();
      slicedReference(perSlice, ds, { ...o, replicas: workers });
      assert.ok(maxRelativeDifference(perSlice, ref) > 1e-3, "per-replica statistics differ from the global batch's");
      if (workers === 2) {
        const cnn = smallCnn();
        const images = datasets.synthetic({ inputShape: [5, 5, 1], classes: 3, size: 24, seed: 42 });
        const p = { ...o, batchSize: 6 };
        await c.fit(cnn, images, p);
        const cnnRef = smallCnn();
        await modelFitReference(cnnRef, images, p);
        const d = maxRelativeDifference(cnn, cnnRef);
        assert.ok(d < TOLERANCE, `CNN: relative difference ${d}`);
        await assert.rejects(c.fit(batchNormClassifier(), ds, { ...o, accumulate: 2 }), (e: unknown) => e instanceof ConfigError && /batchNorm "sync"/.test(e.message));
      }
    } finally {
      await c.close();
    }
  });
}

test('batchNorm "sync" with elastic training is refused when the cluster is built', () => {
  assert.throws(() => cluster().workers(2).strategy("data", { batchNorm: "sync", elastic: { minWorkers: 1 } }).spec(), (e: unknown) => e instanceof ConfigError && /re-forms its ring between steps/.test(e.message));
});
