import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import * as path from "node:path";
import { maxRelativeDifference, smallClassifier, weightsMoved } from "../helpers/models";
import { BatchCap } from "../helpers/custom-layers";
import { modelFitReference } from "../helpers/reference";

/**
 * Gradient accumulation: batches of 4 accumulated 3 times on each of 2 replicas make the same
 * updates as model.fit with batches of 12 (weights and every step's loss), uneven chunks and a
 * short last batch included; the same under sync parameter servers.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const LAYERS = path.join(__dirname, "..", "helpers", "custom-layers.js");

/** smallClassifier's layers with a BatchCap between them (no weights): any pass of more than `max` samples throws on the worker. */
function capped(max: number): tf.LayersModel {
  const plain = smallClassifier(6, 3, { l2: 0.01 });
  const [first, second] = plain.layers;
  return tf.sequential({ layers: [first!, new BatchCap({ max }), second!] });
}

test("accumulate 3 x batchSize 4 on 2 workers equals model.fit at batch 12, no pass larger than a chunk", async (t) => {
  // 29 samples: updates of 12, 12 and 5 an epoch; a replica's 6 samples go in chunks of 2, its 2 or 3 of the last in chunks of 1.
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 29, seed: 41 });
  const o = { epochs: 2, shuffle: true, seed: 6, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 } };
  const c = await cluster().workers(2).modules([LAYERS]).launch();
  try {
    // Without accumulation a replica's pass is 6 samples, which the cap refuses: it is watching.
    await assert.rejects(c.fit(capped(2), ds, { ...o, batchSize: 12, loss: "categoricalCrossentropy" }), /BatchCap: a pass of 6 samples, above 2/);
    const model = capped(2);
    const before = model.getWeights().map((w) => w.clone());
    const run = await c.fit(model, ds, { ...o, batchSize: 4, accumulate: 3, loss: "categoricalCrossentropy" });
    const ref = smallClassifier(6, 3, { l2: 0.01 });
    const losses = await modelFitReference(ref, ds, { ...o, batchSize: 12 });
    assert.ok(weightsMoved(before, model));
    const diff = maxRelativeDifference(model, ref);
    t.diagnostic(`largest relative difference from model.fit at batch 12: ${diff.toExponential(2)}`);
    assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
    assert.deepEqual(run.history.map((s) => s.samples), [12, 12, 5, 12, 12, 5]);
    run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) <= TOLERANCE * Math.max(1, losses[i]!), `step ${i}: loss ${s.loss} vs ${losses[i]}`));
  } finally {
    await c.close();
  }
});

test("accumulate under sync parameter servers: 2 x batchSize 6 on 2 workers equals model.fit at batch 12", async (t) => {
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 29, seed: 41 });
  const o = { epochs: 2, shuffle: true, seed: 6, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 } };
  const c = await cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }).modules([LAYERS]).launch();
  try {
    const model = capped(3);
    const run = await c.fit(model, ds, { ...o, batchSize: 6, accumulate: 2, loss: "categoricalCrossentropy" });
    const ref = smallClassifier(6, 3, { l2: 0.01 });
    const losses = await modelFitReference(ref, ds, { ...o, batchSize: 12 });
    const diff = maxRelativeDifference(model, ref);
    t.diagnostic(`largest relative difference from model.fit at batch 12: ${diff.toExponential(2)}`);
    assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
    run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) <= TOLERANCE * Math.max(1, losses[i]!), `step ${i}: loss ${s.loss} vs ${losses[i]}`));
  } finally {
    await c.close();
  }
});
