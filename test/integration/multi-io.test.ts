import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, DataError, datasets, type ClusterBuilder, type ValidationData } from "../../sdk/index";
import { maxRelativeDifference } from "../helpers/models";
import { lateContext, twoHeaded, twoHeadedData, twoHeadedTensors } from "../helpers/two-headed";
import type { PipelinePlan } from "../../sdk/plan/plans";

/**
 * Models with two inputs and two outputs on real worker processes, against model.fit on the same
 * batches: data parallelism and sync and async parameter servers train to model.fit's weights,
 * and the History has model.fit's names and values (the total loss, each output's loss, each
 * output's metrics, validation's). Data given as maps by name is put in the model's order.
 * Under a pipeline and a hybrid a model input enters at a later stage and an output leaves at
 * an earlier one. lossWeights (which TF.js's compile lacks) is checked against a hand-written
 * one-process loop.
 */

tf.enableProdMode();
const TOLERANCE = 1e-5;
const ds = twoHeadedData(36, 7);
const held = twoHeadedData(12, 70);
const o = { epochs: 2, batchSize: 12, shuffle: false, seed: 0 };

function compiled(build: () => tf.LayersModel = twoHeaded): tf.LayersModel {
  const m = build();
  m.compile({ optimizer: tf.train.sgd(0.2), loss: { label: "categoricalCrossentropy", score: "meanSquaredError" }, metrics: ["accuracy"] });
  return m;
}

async function modelFit(validate: boolean, build: () => tf.LayersModel = twoHeaded): Promise<{ model: tf.LayersModel; history: Record<string, number[]> }> {
  const model = compiled(build);
  const t = twoHeadedTensors(36, 7);
  const v = twoHeadedTensors(12, 70);
  const h = await model.fit([t.features, t.context], [t.label, t.score], { ...o, verbose: 0, ...(validate ? { validationData: [[v.features, v.context], [v.label, v.score]] as [tf.Tensor[], tf.Tensor[]] } : {}) });
  return { model, history: h.history as Record<string, number[]> };
}

function sameHistory(got: Record<string, number[]>, want: Record<string, number[]>): void {
  assert.deepEqual(Object.keys(got).filter((k) => k in want).sort(), Object.keys(want).sort(), `History names: ${Object.keys(got).join(", ")} vs model.fit's ${Object.keys(want).join(", ")}`);
  for (const [k, values] of Object.entries(want)) values.forEach((w, e) => assert.ok(Math.abs(got[k]![e]! - w) <= TOLERANCE * Math.max(1, Math.abs(w)), `epoch ${e}: ${k} ${got[k]?.[e]} vs model.fit's ${w}`));
}

/**
 * TF.js 4.22's evaluate returns one scalar more than a multi-output model has names (a leading
 * copy of the first output's loss: [label_loss, loss, label_loss, score_loss, ...]), so model.fit
 * files its validation entries one place off (its val_loss is the first output's loss). The
 * last epoch's val_ entries are checked against evaluate's values past that copy.
 */
function sameValidation(history: Record<string, number[]>, fitted: tf.LayersModel): void {
  const v = twoHeadedTensors(12, 70);
  const evaluated = (fitted.evaluate([v.features, v.context], [v.label, v.score], { batchSize: 12 }) as tf.Scalar[]).map((s) => s.dataSync()[0]!).slice(1);
  const names = ["val_loss", "val_label_loss", "val_score_loss", "val_label_acc", "val_score_acc"];
  names.forEach((k, i) => assert.ok(Math.abs(history[k]!.at(-1)! - evaluated[i]!) <= TOLERANCE * Math.max(1, Math.abs(evaluated[i]!)), `${k} ${history[k]?.at(-1)} vs model.evaluate's ${evaluated[i]}`));
  assert.ok(Math.abs(history.val_loss!.at(-1)! - history.val_label_loss!.at(-1)! - history.val_score_loss!.at(-1)!) < 1e-6, "val_loss is the outputs' total");
}

const setups: Array<{ name: string; build: () => ClusterBuilder; validate: boolean }> = [
  { name: "data, 2 workers", build: () => cluster().workers(2).strategy("data"), validate: true },
  { name: "sync parameter servers, 2 workers", build: () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }), validate: true },
  { name: "async parameter servers, 1 worker", build: () => cluster().workers(1).ps(1).strategy("ps", { mode: "async" }), validate: false },
  { name: "elastic data, 2 workers", build: () => cluster().workers(2).strategy("data", { elastic: { minWorkers: 1 } }), validate: true },
];

for (const setup of setups) {
  test(`${setup.name}: two inputs and two outputs train to model.fit's weights, with model.fit's History`, async () => {
    const c = await setup.build().backend("cpu").launch();
    try {
      const model = compiled();
      const run = await c.fit(model, ds, { ...o, ...(setup.validate ? { validationData: held } : {}) });
      const want = await modelFit(setup.validate);
      assert.ok("label_loss" in want.history && "score_acc" in want.history, `model.fit's names: ${Object.keys(want.history).join(", ")}`);
      sameHistory(run.byEpoch.history, Object.fromEntries(Object.entries(want.history).filter(([k]) => !k.startsWith("val_"))));
      if (setup.validate) sameValidation(run.byEpoch.history, want.model);
      const diff = maxRelativeDifference(model, want.model);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
      assert.equal(c.state, "ready");
    } finally {
      await c.close();
    }
  });
}

test("validationData as model.fit takes it for two inputs and two outputs: lists in the model's order, and maps by name", async () => {
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  try {
    const v = twoHeadedTensors(12, 70);
    const forms: Array<[string, ValidationData]> = [
      ["lists", [[v.features, v.context], [v.label, v.score]]],
      ["maps", [{ context: v.context, features: v.features }, { score: v.score, label: v.label }]],
    ];
    const want = await modelFit(true);
    for (const [form, validationData] of forms) {
      const run = await c.fit(compiled(), ds, { ...o, validationData });
      assert.ok("val_loss" in run.byEpoch.history, `${form}: validated`);
      sameValidation(run.byEpoch.history, want.model);
    }
  } finally {
    await c.close();
  }
});

const staged: Array<{ name: string; build: () => ClusterBuilder; ends?: number[][][] }> = [
  // The only cut points are after "trunk" and before "score": stage 1 reads "context" and makes "label".
  { name: "pipeline, 3 stages", build: () => cluster().workers(3).strategy("pipeline", { stages: 3, microBatches: 2 }), ends: [[[0], []], [[1], [0]], [[], [1]]] },
  { name: "hybrid, 2 x 2", build: () => cluster().workers(4).strategy("hybrid", { stages: 2, replicas: 2, microBatches: 2 }) },
  { name: "model parallelism, 3 stages", build: () => cluster().workers(3).strategy("model"), ends: [[[0], []], [[1], [0]], [[], [1]]] },
];

for (const setup of staged) {
  test(`${setup.name}: inputs enter and outputs leave at the stages holding their layers, equal to model.fit`, async () => {
    const c = await setup.build().backend("cpu").launch();
    try {
      const model = compiled(lateContext);
      const run = await c.fit(model, ds, { ...o, validationData: held });
      const plan = run.plan as PipelinePlan;
      if (setup.ends) assert.deepEqual(plan.stagePlans.map((st) => [st.feeds, st.heads]), setup.ends);
      assert.ok(plan.stagePlans.some((st) => st.feeds.length > 0 && st.stage > 0) || plan.stagePlans.some((st) => st.heads.length > 0 && st.stage < plan.stages - 1), "an input enters late or an output leaves early");
      const want = await modelFit(false, lateContext);
      sameHistory(run.byEpoch.history, want.history);
      sameValidation(run.byEpoch.history, want.model);
      const diff = maxRelativeDifference(model, want.model);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });
}

test("lossWeights weigh each output's loss (against a one-process loop); wrong names and counts are refused", async () => {
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  try {
    const model = twoHeaded();
    const weights = { score: 3, label: 0.5 };
    const run = await c.fit(model, ds, { ...o, epochs: 1, optimizer: { name: "sgd", learningRate: 0.2 }, loss: ["categoricalCrossentropy", "meanSquaredError"], lossWeights: weights });
    // The same steps by hand: 0.5 x crossentropy(label) + 3 x mse(score), mean over each batch of 12.
    const ref = twoHeaded();
    const opt = tf.train.sgd(0.2);
    const t = twoHeadedTensors(36, 7);
    const losses: number[] = [];
    for (let s = 0; s < 3; s++) {
      const rows = (x: tf.Tensor) => x.slice([s * 12, 0], [12, -1]);
      const loss = opt.minimize(() => {
        const [label, score] = ref.apply([rows(t.features), rows(t.context)], { training: true }) as tf.Tensor[];
        const ce = tf.mean(tf.metrics.categoricalCrossentropy(rows(t.label), label!));
        return tf.add(tf.mul(ce, 0.5), tf.mul(tf.mean(tf.metrics.meanSquaredError(rows(t.score), score!)), 3)) as tf.Scalar;
      }, true)!;
      losses.push(loss.dataSync()[0]!);
    }
    run.history.forEach((r, i) => assert.ok(Math.abs(r.loss - losses[i]!) < 1e-5 * Math.max(1, losses[i]!), `step ${i}: loss ${r.loss} vs ${losses[i]}`));
    const diff = maxRelativeDifference(model, ref);
    assert.ok(diff < 1e-4, `relative difference ${diff}`);
    await assert.rejects(c.fit(twoHeaded(), ds, { ...o, loss: ["meanSquaredError"] }), (e: unknown) => e instanceof ConfigError && /loss lists 1 value\(s\); the model has 2 output\(s\) \(label, score\)/.test(e.message));
    await assert.rejects(c.fit(twoHeaded(), ds, { ...o, lossWeights: { label: 1, extra: 2 } }), (e: unknown) => e instanceof ConfigError && /outputs the model does not have \(extra\)/.test(e.message));
    const t2 = twoHeadedTensors(8, 3);
    const misnamed = datasets.fromTensors({ features: t2.features, ctx: t2.context }, [t2.label, t2.score]);
    await assert.rejects(c.fit(twoHeaded(), misnamed, { batchSize: 4 }), (e: unknown) => e instanceof DataError && /no input ctx/.test(e.message) && /nothing for context/.test(e.message));
    await assert.rejects(c.fit(twoHeaded(), ds, { ...o, classWeight: { 0: 1, 1: 2, 2: 1 } }), (e: unknown) => e instanceof ConfigError && /2 target columns/.test(e.message));
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
});
