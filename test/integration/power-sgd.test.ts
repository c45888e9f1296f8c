import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets } from "../../sdk/index";
import { rng, mixSeed } from "../../sdk/data/random";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { powerSgdReference } from "../helpers/power-sgd-reference";

/**
 * compression { name: "powersgd", rank } on real workers: at the full rank the approximation is
 * exact, so the fit equals float32 data parallelism (model.fit); at rank 1 it equals PowerSGD
 * simulated in one process from the paper, error feedback and warm-started Q included.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 48, seed: 51 });
const o = { epochs: 2, batchSize: 12, seed: 7, optimizer: { name: "sgd" as const, learningRate: 0.3 }, loss: "categoricalCrossentropy" as const };
/** The workers' first Q for variable v: the same seeded values. */
const q0 = (v: number, m: number, r: number) => {
  const next = rng(mixSeed(0x9059, v));
  return tf.tensor2d(Float32Array.from({ length: m * r }, () => next() * 2 - 1), [m, r]);
};

test("PowerSGD at the full rank equals float32 data parallelism; at rank 1 it equals the one-process simulation; the plan says what it sends", async (t) => {
  const c = await cluster().workers(2).strategy("data", { compression: { name: "powersgd", rank: 64 } }).backend("cpu").launch();
  try {
    const model = smallClassifier(6, 3);
    await c.fit(model, ds, o);
    const ref = smallClassifier(6, 3);
    await modelFitReference(ref, ds, o);
    const full = maxRelativeDifference(model, ref);
    t.diagnostic(`full rank vs model.fit: ${full.toExponential(2)}`);
    assert.ok(full < 1e-5, `relative difference ${full}`);
  } finally {
    await c.close();
  }
  const low = await cluster().workers(2).strategy("data", { compression: { name: "powersgd", rank: 1 } }).backend("cpu").launch();
  try {
    const plan = low.plan(smallClassifier(6, 3), { batchSize: 12 });
    assert.match(plan.explain(), /compression powersgd, rank 1: each gradient of two or more dimensions goes as P \(n x r\) and Q \(m x r\)/);
    // Planned before the fit from FLOPs; the fit's plan adds PowerSGD's own work as a worker timed it.
    assert.match(plan.prediction?.basis ?? "", /PowerSGD's work at rank 1 [\d.]+ ms a step \(from its FLOPs\)/);
    const model = smallClassifier(6, 3);
    const run = await low.fit(model, ds, o);
    assert.match(run.plan.prediction?.basis ?? "", /PowerSGD's work at rank 1 [\d.]+ ms a step \(timed on a worker\)/);
    const sim = smallClassifier(6, 3);
    powerSgdReference(sim, ds, { ...o, replicas: 2, q0, rank: 1 });
    const diff = maxRelativeDifference(model, sim);
    t.diagnostic(`rank 1 vs the one-process simulation: ${diff.toExponential(2)}`);
    assert.ok(diff < 1e-5, `relative difference ${diff}`);
    const ref = smallClassifier(6, 3);
    await modelFitReference(ref, ds, o);
    assert.ok(maxRelativeDifference(model, ref) > 1e-3, "rank 1 is an approximation: it ends away from float32's");
  } finally {
    await low.close();
  }
  assert.throws(() => cluster().workers(2).strategy("data", { compression: { name: "powersgd", rank: 2 }, elastic: { minWorkers: 1 } }).spec(), (e: unknown) => e instanceof ConfigError && /PowerSGD keeps each replica's error/.test(e.message));
});
