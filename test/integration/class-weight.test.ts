import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, DataError, datasets } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";

/**
 * classWeight against model.fit's on the same batches: each sample's loss weighted by its
 * class, the loss recorded as model.fit's History has it, validation unweighted; one-hot labels
 * under data parallelism, class ids under a pipeline.
 */

tf.enableProdMode();
const TOLERANCE = 1e-5;
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 36, seed: 31 });
const held = datasets.synthetic({ inputShape: [6], classes: 3, size: 12, seed: 32 });
const o = { epochs: 2, batchSize: 8, shuffle: false, seed: 0 };
const classWeight = { 0: 1, 1: 3, 2: 0.5 };

function compiled(loss: string): tf.LayersModel {
  const m = smallClassifier(6, 3);
  m.compile({ optimizer: tf.train.sgd(0.3), loss, metrics: ["accuracy"] });
  return m;
}

function close(got: Record<string, number[]>, want: Record<string, number[]>): void {
  for (const [k, values] of Object.entries(want)) values.forEach((w, e) => assert.ok(Math.abs(got[k]![e]! - w) <= TOLERANCE * Math.max(1, Math.abs(w)), `epoch ${e}: ${k} ${got[k]?.[e]} vs model.fit's ${w}`));
}

test("classWeight under data parallelism (one-hot labels): History and weights equal model.fit's; validation unweighted", async () => {
  const c = await cluster().workers(2).launch();
  try {
    const model = compiled("categoricalCrossentropy");
    const run = await c.fit(model, ds, { ...o, classWeight, validationData: held });
    // The native step weighs each row's loss by its class, as model.fit does.
    assert.deepEqual(run.replicaStep, { native: true });
    const ref = compiled("categoricalCrossentropy");
    const { x, y } = ds.toTensors();
    const v = held.toTensors();
    const h = await ref.fit(x, y, { ...o, verbose: 0, classWeight, validationData: [v.x, v.y] });
    close(run.byEpoch.history, h.history as Record<string, number[]>);
    assert.ok(maxRelativeDifference(model, ref) < 1e-4);
    // Unweighted, the same fit ends elsewhere.
    const plain = compiled("categoricalCrossentropy");
    await c.fit(plain, ds, o);
    assert.ok(maxRelativeDifference(plain, ref) > 1e-3);
    await assert.rejects(c.fit(compiled("categoricalCrossentropy"), ds, { ...o, classWeight: { 0: 1, 2: 1 } }), (e: unknown) => e instanceof DataError && /no weight for class 1/.test(e.message));
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
});

test("classWeight under a 2-stage pipeline with class ids: equal to model.fit's", async () => {
  const { x } = ds.toTensors();
  const ids = tf.tensor1d(Array.from(ds.y.data as Float32Array).flatMap((_, i, a) => (i % 3 === 0 ? [[a[i]!, a[i + 1]!, a[i + 2]!].indexOf(1)] : [])), "int32");
  const sparse = datasets.fromTensors(x, ids);
  const c = await cluster().workers(2).strategy("pipeline", { microBatches: 2 }).launch();
  try {
    const model = compiled("sparseCategoricalCrossentropy");
    const run = await c.fit(model, sparse, { ...o, classWeight });
    const ref = compiled("sparseCategoricalCrossentropy");
    const h = await ref.fit(x, ids.toFloat(), { ...o, verbose: 0, classWeight });
    close(run.byEpoch.history, h.history as Record<string, number[]>);
    assert.ok(maxRelativeDifference(model, ref) < 1e-4);
  } finally {
    await c.close();
  }
});
