import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets, learningRates, type ClusterBuilder, type LearningRateSchedule } from "../../sdk/index";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { createOptimizer } from "../../sdk/model/optimizers";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";

/**
 * Learning-rate schedules against model.fit whose optimizer gets the same rate before every
 * batch (set from a callback, as Keras users schedule by hand): every replica, stage and sync
 * server applies the step's rate, so the weights equal model.fit's and each step records it.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
// 26 samples in batches of 8: four steps an epoch (the last of 2), three epochs.
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 26, seed: 12 });
const o = { epochs: 3, batchSize: 8, shuffle: false, seed: 0 };
const PER_EPOCH = 4;

/** model.fit on the dataset in its order, the optimizer's rate set from `schedule` before each batch. */
async function reference(optimizer: OptimizerSpec, schedule: LearningRateSchedule): Promise<tf.LayersModel> {
  const model = smallClassifier(6, 3);
  const opt = createOptimizer(optimizer);
  model.compile({ optimizer: opt, loss: "categoricalCrossentropy" });
  const { x, y } = ds.gather(null, 0, ds.size);
  let epoch = 0;
  const set = opt as unknown as { learningRate: number; setLearningRate?: (r: number) => void };
  await model.fit(tf.tensor(x.data, [...x.shape]), tf.tensor(y.data, [...y.shape]), {
    ...o,
    verbose: 0,
    callbacks: {
      onEpochBegin: async (e) => void (epoch = e),
      onBatchBegin: async (b) => {
        const rate = schedule(epoch * PER_EPOCH + b, epoch, optimizer.learningRate);
        if (set.setLearningRate) set.setLearningRate(rate);
        else set.learningRate = rate;
      },
    },
  });
  return model;
}

for (const [name, make, optimizer, schedule] of [
  ["data parallelism (2 workers, Adam, warm-up + cosine)", () => cluster().workers(2), { name: "adam", learningRate: 0.05, beta1: 0.9, beta2: 0.999 }, learningRates.warmupCosine({ warmupSteps: 3, totalSteps: 10, floor: 0.1 })],
  ["a 2-stage pipeline (momentum, step decay)", () => cluster().workers(2).strategy("pipeline", { microBatches: 2 }), { name: "momentum", learningRate: 0.2, momentum: 0.9, useNesterov: false }, learningRates.stepDecay({ every: 4, factor: 0.5 })],
  ["sync parameter servers (2 workers, 1 server, SGD, a function of the epoch)", () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }), { name: "sgd", learningRate: 0.5 }, (_s: number, e: number, base: number) => base / (1 + e)],
] as Array<[string, () => ClusterBuilder, OptimizerSpec, LearningRateSchedule]>) {
  test(`schedule under ${name}: equal to model.fit with the same rate each batch`, async (t) => {
    const c = await make().launch();
    try {
      const model = smallClassifier(6, 3);
      const run = await c.fit(model, ds, { ...o, optimizer, loss: "categoricalCrossentropy", schedule });
      const ref = await reference(optimizer, schedule);
      const diff = maxRelativeDifference(model, ref);
      t.diagnostic(`largest relative difference from model.fit: ${diff.toExponential(2)}`);
      assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
      assert.deepEqual(run.history.map((s) => s.learningRate), run.history.map((s) => schedule(s.step, s.epoch, optimizer.learningRate)));
      // Without the schedule the same fit ends elsewhere: the rates were applied.
      const plain = smallClassifier(6, 3);
      await c.fit(plain, ds, { ...o, optimizer, loss: "categoricalCrossentropy" });
      assert.ok(maxRelativeDifference(plain, ref) > 1e-3);
    } finally {
      await c.close();
    }
  });
}

test("async parameter servers apply a schedule by their own count of updates (one worker: equal to model.fit); a schedule that gives no usable rate fails the fit before its first step, naming the step", async () => {
  const c = await cluster().workers(1).ps(1).strategy("ps", { mode: "async" }).launch();
  try {
    const optimizer: OptimizerSpec = { name: "sgd", learningRate: 0.5 };
    const schedule = learningRates.stepDecay({ every: 4, factor: 0.5 });
    const model = smallClassifier(6, 3);
    await c.fit(model, ds, { ...o, optimizer, loss: "categoricalCrossentropy", schedule });
    const ref = await reference(optimizer, schedule);
    const diff = maxRelativeDifference(model, ref);
    assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
    const plain = smallClassifier(6, 3);
    await c.fit(plain, ds, { ...o, optimizer, loss: "categoricalCrossentropy" });
    assert.ok(maxRelativeDifference(plain, ref) > 1e-3, "without the schedule the same fit ends elsewhere");
    const steps: number[] = [];
    await assert.rejects(
      c.fit(smallClassifier(6, 3), ds, { ...o, onStep: (s) => steps.push(s.step), schedule: (step) => (step === 9 ? Number.NaN : 0.1) }),
      (e: unknown) => e instanceof ConfigError && /gave NaN for step 9 \(epoch 2\)/.test(e.message),
    );
    assert.deepEqual(steps, []);
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
});
