import assert from "node:assert/strict";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type Dataset } from "../../sdk/index";
import { ConfigError, DataError, ModelError, NonFiniteError, WorkerError } from "../../sdk/errors/errors";
import { LearnedScale, Tripwire } from "../helpers/custom-layers";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { slicedReference } from "../helpers/sliced-reference";

/**
 * Ordinary TF.js models and data, as users bring them, on 2 worker processes: steps that go
 * non-finite, a layer that throws on a worker, a compiled model, custom layers, int32 labels.
 * After each failure the same cluster trains the next fit.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const LAYERS = path.join(__dirname, "..", "helpers", "custom-layers.js");

/** An optimizer class of the user's own: the workers build optimizers by name and cannot know it. */
class OwnSgd extends tf.SGDOptimizer {
  static override get className(): string {
    return "OwnSgd";
  }
}

function regression(seed = 1): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ units: 1, inputShape: [2], kernelInitializer: tf.initializers.glorotUniform({ seed }) })] });
}

/** y = x0 + 2 x1 on 24 samples; sample `poison` (if given) has x0 = 1e30, finite but enough to overflow the loss. */
function line(poison?: number): Dataset {
  const x = tf.tidy(() => tf.randomUniform([24, 2], -1, 1, "float32", 7));
  const xs = x.arraySync() as number[][];
  if (poison !== undefined) xs[poison]![0] = 1e30;
  const ys = xs.map(([a, b]) => [a! + 2 * b!]);
  return datasets.fromTensors(tf.tensor2d(xs), tf.tensor2d(ys), poison === undefined ? "line" : "poisoned line");
}

function finite(model: tf.LayersModel): boolean {
  return model.getWeights().every((w) => (w.dataSync() as Float32Array).every(Number.isFinite));
}

describe("user models on 2 workers, strategy data", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(2).strategy("data").backend("cpu").modules([LAYERS]).launch();
  });
  after(async () => {
    await c?.close();
  });

  test("a step whose loss overflows rejects fit with NonFiniteError naming the step and ranks; no update applied; the cluster trains the next fit", async () => {
    const model = regression();
    const start = model.getWeights().map((w) => w.clone());
    const steps: number[] = [];
    // Sample 9 lands in step 1 (batch 8, no shuffling), on rank 0 (samples 8-11 of that batch).
    const err = await c.fit(model, line(9), { batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: "sgd", onStep: (r) => steps.push(r.step) }).then(
      () => assert.fail("fit resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof NonFiniteError, String(err));
    assert.equal(err.details.step, 1);
    assert.equal(err.details.ranks, "0");
    assert.equal(err.details.where, "loss");
    assert.match(err.message, /learning rate|nonFinite/);
    assert.deepEqual(model.getWeights().map((w) => w.dataSync()), start.map((w) => w.dataSync()), "the model keeps its weights when fit rejects");
    assert.equal(c.state, "ready");
    const run = await c.fit(regression(), line(), { batchSize: 8, loss: "meanSquaredError", optimizer: "sgd" });
    assert.equal(run.history.length, 3);
  });

  test('nonFinite "skip" drops the poisoned step on every replica and trains on: equal to the reference without that step', async () => {
    const model = regression();
    const run = await c.fit(model, line(9), { epochs: 2, batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: { name: "sgd", learningRate: 0.1 }, nonFinite: "skip" });
    assert.deepEqual(run.history.filter((r) => r.skipped).map((r) => r.step), [1, 4]);
    assert.deepEqual(run.history[1]!.nonFinite, [{ rank: 0, where: "loss" }]);
    assert.ok(finite(model));
    assert.match(run.toString(), /2 step\(s\) skipped/);
    const reference = regression();
    slicedReference(reference, line(9), { epochs: 2, batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: { name: "sgd", learningRate: 0.1 }, replicas: 2, skipSteps: [1, 4] });
    assert.ok(maxRelativeDifference(model, reference) < TOLERANCE);
  });

  test("a layer that throws on a worker rejects fit with WorkerError carrying the worker's message, stack and rank; the cluster trains the next fit", async () => {
    const model = tf.sequential({ layers: [new Tripwire({ trigger: 999, inputShape: [2] } as never), tf.layers.dense({ units: 1 })] });
    const xs = tf.tensor2d(Array.from({ length: 16 }, (_, i) => [i === 13 ? 999 : i / 16, 0.5]));
    const err = await c.fit(model, datasets.fromTensors(xs, tf.ones([16, 1])), { batchSize: 8, shuffle: false, loss: "meanSquaredError" }).then(
      () => assert.fail("fit resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkerError, String(err));
    assert.equal(err.details.step, 1);
    assert.equal(err.details.rank, 1, "sample 13 is in rank 1's slice of step 1");
    assert.equal(err.details.clusterIntact, true);
    const cause = err.cause as Error;
    assert.match(cause.message, /Tripwire: a sample holds 999/);
    assert.match(cause.stack ?? "", /custom-layers\.js/);
    assert.equal(c.state, "ready");
    const ok = tf.sequential({ layers: [new Tripwire({ trigger: 999, inputShape: [2] } as never), tf.layers.dense({ units: 1 })] });
    await c.fit(ok, line(), { batchSize: 8, loss: "meanSquaredError" });
  });

  test("a custom layer from modules() trains as model.fit trains it", async () => {
    const make = (): tf.LayersModel => {
      const m = tf.sequential();
      m.add(new LearnedScale({ inputShape: [6] } as never));
      m.add(tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) }));
      return m;
    };
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 24, seed: 2 });
    const distributed = make();
    const single = make();
    const o = { epochs: 2, batchSize: 8, optimizer: { name: "sgd" as const, learningRate: 0.3 }, shuffle: true, seed: 3 };
    await c.fit(distributed, ds, o);
    await modelFitReference(single, ds, o);
    assert.ok(maxRelativeDifference(distributed, single) < TOLERANCE);
    assert.notEqual(distributed.getWeights()[0]!.dataSync()[0], 1, "the custom layer's own weight trained");
  });

  test("model.compile is honoured: its optimizer, loss and accuracy, per epoch as model.fit's History; evaluate works after", async () => {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 4 });
    const distributed = smallClassifier();
    const single = smallClassifier();
    distributed.compile({ optimizer: tf.train.adam(0.02), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
    const run = await c.fit(distributed, ds, { epochs: 2, batchSize: 8, shuffle: true, seed: 9 });
    const reference = await modelFitReference(single, ds, { epochs: 2, batchSize: 8, shuffle: true, seed: 9, optimizer: { name: "adam", learningRate: 0.02, beta1: 0.9, beta2: 0.999, epsilon: 1e-7 } });
    assert.equal(reference.length, run.history.length);
    assert.ok(maxRelativeDifference(distributed, single) < TOLERANCE, "trained with the compiled Adam");
    assert.deepEqual(run.training?.origins, { optimizer: "model.compile", loss: "model.compile" });
    assert.match(run.toString(), /optimizer adam \(learningRate 0\.02.*from model\.compile/);
    // run.notes: the lines the summary prints, one per remark.
    assert.match(run.notes[0]!, /^optimizer adam \(learningRate 0\.02.*from model\.compile/);
    assert.ok(run.notes.some((l) => /^epoch 2: /.test(l)) && run.notes.every((l) => run.toString().includes(l)), run.notes.join("\n"));
    assert.deepEqual(run.byEpoch.epoch, [0, 1]);
    const acc = run.byEpoch.history.acc!;
    assert.equal(acc.length, 2);
    // Accuracy of each step is the share of the batch the model classified right before the update.
    const { x, y } = ds.toTensors();
    const [lossNow, accNow] = distributed.evaluate(x, y) as tf.Scalar[];
    assert.ok(Number.isFinite(lossNow!.dataSync()[0]!) && accNow!.dataSync()[0]! >= 0 && accNow!.dataSync()[0]! <= 1);
    assert.ok(acc.every((a) => a >= 0 && a <= 1));
  });

  test("an uncompiled model is compiled by fit as trained, so evaluate works; fit options override compile", async () => {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 16, seed: 4 });
    const m = smallClassifier();
    const run = await c.fit(m, ds, { batchSize: 8, optimizer: "momentum" });
    assert.deepEqual(run.training?.origins, { optimizer: "fit options", loss: "default" });
    const { x, y } = ds.toTensors();
    assert.ok(Number.isFinite((m.evaluate(x, y) as tf.Scalar).dataSync()[0]!));
    m.compile({ optimizer: "adam", loss: "meanSquaredError" });
    const again = await c.fit(m, ds, { batchSize: 8, loss: "categoricalCrossentropy" });
    assert.deepEqual(again.training?.origins, { optimizer: "model.compile", loss: "fit options" });
    assert.equal(again.training?.optimizer.name, "adam");
  });

  test("what cannot cross the wire or cannot be trained is refused before anything is sent, naming it and the fix", async () => {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 16, seed: 4 });
    const custom = smallClassifier();
    custom.compile({ optimizer: "sgd", loss: (a: tf.Tensor, b: tf.Tensor) => tf.losses.meanSquaredError(a, b) });
    await assert.rejects(c.fit(custom, ds, { batchSize: 8 }), (e: unknown) => e instanceof ConfigError && /loss function/.test(e.message) && /categoricalCrossentropy/.test(e.message));
    await c.fit(custom, ds, { batchSize: 8, loss: "categoricalCrossentropy" });
    // Every tf.train optimizer crosses by name; an optimizer class of the user's own cannot.
    const adagrad = smallClassifier();
    adagrad.compile({ optimizer: tf.train.adagrad(0.1), loss: "categoricalCrossentropy" });
    assert.equal((await c.fit(adagrad, ds, { batchSize: 8 })).training?.optimizer.name, "adagrad");
    const own = smallClassifier();
    own.compile({ optimizer: new OwnSgd(0.1), loss: "categoricalCrossentropy" });
    await assert.rejects(c.fit(own, ds, { batchSize: 8 }), (e: unknown) => e instanceof ConfigError && /OwnSgd/.test(e.message) && /Adamax/.test(e.message));
    await assert.rejects(c.fit(smallClassifier(), ds, { batchSize: 17 }), (e: unknown) => e instanceof DataError && /larger than/.test(e.message));
    const ids = datasets.fromTensors(tf.randomUniform([16, 6]), tf.tensor1d(Array.from({ length: 16 }, (_, i) => i % 3), "int32"));
    await assert.rejects(c.fit(smallClassifier(), ids, { batchSize: 8 }), (e: unknown) => e instanceof DataError && /class ids/.test(e.message) && /sparseCategoricalCrossentropy/.test(e.message));
    await assert.rejects(c.fit(smallClassifier(), ds, { batchSize: 8, loss: "sparseCategoricalCrossentropy" }), (e: unknown) => e instanceof DataError && /one-hot/.test(e.message));
    const outOfRange = datasets.fromTensors(tf.randomUniform([16, 6]), tf.tensor1d(Array.from({ length: 16 }, (_, i) => (i === 5 ? 3 : 0)), "int32"));
    await assert.rejects(c.fit(smallClassifier(), outOfRange, { batchSize: 8, loss: "sparseCategoricalCrossentropy" }), (e: unknown) => e instanceof DataError && /sample 5/.test(e.message) && /0 to 2/.test(e.message));
    const nan = datasets.fromTensors(tf.tensor2d(Array.from({ length: 16 }, (_, i) => [i === 7 ? NaN : 1, 1, 1, 1, 1, 1])), tf.oneHot(tf.zeros([16], "int32"), 3));
    await assert.rejects(c.fit(smallClassifier(), nan, { batchSize: 8 }), (e: unknown) => e instanceof DataError && /sample 7/.test(e.message) && /NaN/.test(e.message));
    assert.equal(c.state, "ready");
  });

  test("int32 class ids with sparseCategoricalCrossentropy train (cast on the workers) as model.fit trains float ids", async () => {
    const n = 24;
    const x = tf.randomUniform([n, 6], -1, 1, "float32", 5);
    const ids = Array.from({ length: n }, (_, i) => i % 3);
    const distributed = smallClassifier();
    const single = smallClassifier();
    const o = { epochs: 1, batchSize: 8, optimizer: { name: "sgd" as const, learningRate: 0.3 }, shuffle: false, seed: 0, loss: "sparseCategoricalCrossentropy" as const };
    await c.fit(distributed, datasets.fromTensors(x, tf.tensor1d(ids, "int32")), o);
    await modelFitReference(single, datasets.fromTensors(x, tf.tensor1d(ids, "float32")), o);
    assert.ok(maxRelativeDifference(distributed, single) < TOLERANCE);
  });
});

test("without modules(), a custom layer is refused at load naming the class and the option; the cluster stays ready", async () => {
  const c = await cluster().workers(1).backend("cpu").launch();
  try {
    const m = tf.sequential({ layers: [new LearnedScale({ inputShape: [6] } as never), tf.layers.dense({ units: 3, activation: "softmax" })] });
    await assert.rejects(
      c.fit(m, datasets.synthetic({ inputShape: [6], classes: 3, size: 16 }), { batchSize: 8 }),
      (e: unknown) => e instanceof ModelError && /LearnedScale/.test(e.message) && /\.modules\(/.test(e.message),
    );
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
  assert.throws(() => cluster().workers(1).modules(["./no/such/layers.js"]), (e: unknown) => e instanceof ConfigError && /does not exist/.test(e.message));
});

describe("user models on parameter servers (2 workers, 1 server)", () => {
  for (const mode of ["sync", "async"] as const) {
    test(`${mode}: a step whose loss overflows rejects fit with NonFiniteError; the cluster trains the next fit`, async () => {
      const c = await cluster().workers(2).ps(1).strategy("ps", { mode }).backend("cpu").launch();
      try {
        const err = await c.fit(regression(), line(9), { batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: "sgd" }).then(
          () => assert.fail("fit resolved"),
          (e: unknown) => e,
        );
        assert.ok(err instanceof NonFiniteError, String(err));
        assert.equal(err.details.where, "loss");
        assert.equal(c.state, "ready");
        const model = regression();
        await c.fit(model, line(), { batchSize: 8, loss: "meanSquaredError", optimizer: "sgd" });
        assert.ok(finite(model));
        // "skip": the servers drop the poisoned pushes (sync: the whole step) and training goes on.
        const skipping = regression();
        const o = { epochs: 2, batchSize: 8, shuffle: false, loss: "meanSquaredError" as const, optimizer: { name: "sgd" as const, learningRate: 0.1 }, nonFinite: "skip" as const };
        const run = await c.fit(skipping, line(9), o);
        assert.ok(finite(skipping));
        const found = run.history.flatMap((r) => r.nonFinite ?? []);
        assert.equal(found.length, 2, "sample 9 poisons one slice per epoch");
        assert.ok(found.every((f) => f.where === "loss"));
        if (mode === "sync") {
          assert.deepEqual(run.history.filter((r) => r.skipped).map((r) => r.step), [1, 4]);
          const reference = regression();
          slicedReference(reference, line(9), { ...o, replicas: 2, skipSteps: [1, 4] });
          const diff = maxRelativeDifference(skipping, reference);
          assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
        }
        assert.equal(c.state, "ready");
      } finally {
        await c.close();
      }
    });
  }
});

describe("user models under pipeline (2 stages, 2 micro-batches)", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }).backend("cpu").modules([LAYERS]).launch();
  });
  after(async () => {
    await c?.close();
  });
  const deep = (): tf.LayersModel =>
    tf.sequential({ layers: [new Tripwire({ trigger: 999, inputShape: [2] } as never), tf.layers.dense({ units: 4, kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }), tf.layers.dense({ units: 1, kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) })] });

  test("an overflowing loss stops with NonFiniteError; every stage kept its weights; skip drops that step on every stage", async () => {
    const err = await c.fit(deep(), line(9), { batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: "sgd" }).then(
      () => assert.fail("fit resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof NonFiniteError, String(err));
    assert.equal(err.details.step, 1);
    assert.equal(c.state, "ready");
    const model = deep();
    const run = await c.fit(model, line(9), { epochs: 2, batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: { name: "sgd", learningRate: 0.05 }, nonFinite: "skip" });
    assert.deepEqual(run.history.filter((r) => r.skipped).map((r) => r.step), [1, 4]);
    assert.ok(finite(model));
    const reference = deep();
    slicedReference(reference, line(9), { epochs: 2, batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: { name: "sgd", learningRate: 0.05 }, replicas: 1, microBatches: 2, skipSteps: [1, 4] });
    assert.ok(maxRelativeDifference(model, reference) < TOLERANCE);
  });

  test("a layer that throws in stage 0 rejects fit with its error and stack; the other stage does not wait for it; the next fit trains", async () => {
    const xs = tf.tensor2d(Array.from({ length: 16 }, (_, i) => [i === 3 ? 999 : i / 16, 0.5]));
    const err = await c.fit(deep(), datasets.fromTensors(xs, tf.ones([16, 1])), { batchSize: 8, shuffle: false, loss: "meanSquaredError" }).then(
      () => assert.fail("fit resolved"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof WorkerError, String(err));
    assert.equal(err.details.step, 0);
    assert.equal(err.details.clusterIntact, true);
    assert.match((err.cause as Error).stack ?? "", /custom-layers\.js/);
    assert.equal(c.state, "ready");
    await c.fit(deep(), line(), { batchSize: 8, loss: "meanSquaredError" });
  });
});
