import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type FitOptions } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";

/**
 * fit's callbacks against model.fit's on the same model, data and batches (no shuffling: one
 * model.fit call sees the dataset's order, as the cluster does): the same hooks in the same
 * order with the same indices and logs, and early stopping ending both after the same epoch.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
// 22 samples in batches of 8: three steps an epoch, the last of 6.
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 22, seed: 8 });
const o = { batchSize: 8, shuffle: false, seed: 0 };
const SGD = { name: "sgd" as const, learningRate: 0.3 };

type Event = [string, number | null, Record<string, number> | null];

/** Hooks that write down every call, as model.fit makes them. */
function recorder(events: Event[]): tf.CustomCallbackArgs {
  const logsOf = (logs?: tf.Logs): Record<string, number> | null => (logs ? Object.fromEntries(Object.entries(logs).map(([k, v]) => [k, Number(v)])) : null);
  return {
    onTrainBegin: async () => void events.push(["trainBegin", null, null]),
    onEpochBegin: async (e) => void events.push(["epochBegin", e, null]),
    onBatchBegin: async (b, logs) => void events.push(["batchBegin", b, logsOf(logs)]),
    onBatchEnd: async (b, logs) => void events.push(["batchEnd", b, logsOf(logs)]),
    onEpochEnd: async (e, logs) => void events.push(["epochEnd", e, logsOf(logs)]),
    onTrainEnd: async () => void events.push(["trainEnd", null, null]),
  };
}

/** model.fit on the whole dataset in its order. */
async function reference(model: tf.LayersModel, epochs: number, callbacks: tf.ModelFitArgs["callbacks"]): Promise<void> {
  model.compile({ optimizer: tf.train.sgd(SGD.learningRate), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  const { x, y } = ds.gather(null, 0, ds.size);
  const xs = tf.tensor(x.data, [...x.shape]);
  const ys = tf.tensor(y.data, [...y.shape]);
  await model.fit(xs, ys, { epochs, batchSize: o.batchSize, shuffle: false, verbose: 0, callbacks });
  tf.dispose([xs, ys]);
}

function compiled(): tf.LayersModel {
  const m = smallClassifier(6, 3);
  m.compile({ optimizer: tf.train.sgd(SGD.learningRate), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  return m;
}

function sameEvents(got: Event[], want: Event[]): void {
  assert.deepEqual(got.map(([k, i, logs]) => [k, i, logs ? Object.keys(logs).sort() : null]), want.map(([k, i, logs]) => [k, i, logs ? Object.keys(logs).sort() : null]));
  got.forEach(([k, i, logs], n) => {
    for (const [name, v] of Object.entries(logs ?? {})) {
      const w = want[n]![2]![name]!;
      assert.ok(Math.abs(v - w) <= TOLERANCE * Math.max(1, Math.abs(w)), `${k} ${i}: ${name} ${v} vs model.fit's ${w}`);
    }
  });
}

for (const [name, make] of [
  ["data parallelism, 2 workers", () => cluster().workers(2)],
  ["a 2-stage pipeline", () => cluster().workers(2).strategy("pipeline", { microBatches: 2 })],
] as const) {
  describe(`callbacks under ${name}`, () => {
    let c: Cluster;
    before(async () => {
      c = await make().launch();
    });
    after(async () => {
      await c?.close();
    });

    test("the same hooks as model.fit's, in the same order, with the same indices and logs", async () => {
      const got: Event[] = [];
      const want: Event[] = [];
      const model = compiled();
      await c.fit(model, ds, { ...o, epochs: 2, callbacks: recorder(got) } satisfies FitOptions);
      const ref = smallClassifier(6, 3);
      await reference(ref, 2, recorder(want));
      assert.equal(got.filter(([k]) => k === "batchEnd").length, 6);
      sameEvents(got, want);
      assert.ok(maxRelativeDifference(model, ref) < TOLERANCE);
    });

    test("initialEpoch as model.fit's: epochs 1 and 2 of 3 trained, the callbacks numbering them so", async () => {
      const got: Event[] = [];
      const want: Event[] = [];
      const model = compiled();
      const run = await c.fit(model, ds, { ...o, epochs: 3, initialEpoch: 1, callbacks: recorder(got) });
      const ref = smallClassifier(6, 3);
      ref.compile({ optimizer: tf.train.sgd(SGD.learningRate), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
      const { x, y } = ds.gather(null, 0, ds.size);
      await ref.fit(tf.tensor(x.data, [...x.shape]), tf.tensor(y.data, [...y.shape]), { epochs: 3, initialEpoch: 1, batchSize: o.batchSize, shuffle: false, verbose: 0, callbacks: recorder(want) });
      sameEvents(got, want);
      assert.deepEqual(run.byEpoch.epoch, [1, 2]);
      assert.deepEqual(run.history.map((s) => s.step), [3, 4, 5, 6, 7, 8]);
      assert.ok(maxRelativeDifference(model, ref) < TOLERANCE);
      await assert.rejects(c.fit(compiled(), ds, { ...o, epochs: 2, initialEpoch: 2 }), /initialEpoch 2 is not below epochs 2/);
    });

    test("early stopping ends the fit after the epoch model.fit's ends after; the fit resolves with the steps done", async () => {
      const model = compiled();
      // A loss must fall by 10 to count as better: the second epoch stops both.
      const run = await c.fit(model, ds, { ...o, epochs: 5, callbacks: tf.callbacks.earlyStopping({ monitor: "loss", minDelta: 10 }) });
      const ref = smallClassifier(6, 3);
      const epochs: number[] = [];
      await reference(ref, 5, [tf.callbacks.earlyStopping({ monitor: "loss", minDelta: 10 }), new tf.CustomCallback({ onEpochEnd: async (e) => void epochs.push(e) })]);
      assert.deepEqual(epochs, [0, 1]);
      assert.deepEqual(run.byEpoch.epoch, [0, 1]);
      assert.equal(run.history.length, 6);
      assert.ok(maxRelativeDifference(model, ref) < TOLERANCE);
      // A callback that throws stops the fit with its error; the cluster stays ready.
      await assert.rejects(c.fit(compiled(), ds, { ...o, epochs: 2, callbacks: { onEpochEnd: async () => Promise.reject(new Error("from a callback")) } }), /from a callback/);
      assert.equal(c.state, "ready");
    });
  });
}
