import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets, type Cluster } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";

/**
 * Validation against model.fit's on the same model and data: validationData and validationSplit
 * give the History model.fit gives (loss, acc, val_loss, val_acc per epoch), evaluated by the
 * replicas, each a shard (through the stages under a pipeline and a hybrid; on the servers'
 * weights under sync parameter servers); early stopping on val_loss ends both after the same
 * epoch.
 */

tf.enableProdMode();
const TOLERANCE = 1e-5;
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 40, seed: 21 });
const held = datasets.synthetic({ inputShape: [6], classes: 3, size: 23, seed: 22 });
const o = { epochs: 3, batchSize: 9, shuffle: false, seed: 0 };

function compiled(): tf.LayersModel {
  const m = smallClassifier(6, 3);
  m.compile({ optimizer: tf.train.sgd(0.3), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  return m;
}

function tensors(d: typeof ds): [tf.Tensor, tf.Tensor] {
  const { x, y } = d.toTensors();
  return [x, y];
}

function sameHistory(got: Record<string, number[]>, want: Record<string, number[]>): void {
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const [k, values] of Object.entries(want)) {
    values.forEach((w, e) => assert.ok(Math.abs(got[k]![e]! - w) <= TOLERANCE * Math.max(1, Math.abs(w)), `epoch ${e}: ${k} ${got[k]![e]} vs model.fit's ${w}`));
  }
}

describe("validation under data parallelism, 3 workers", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(3).launch();
  });
  after(async () => {
    await c?.close();
  });

  test("validationData: History equals model.fit's, val_loss and val_acc included; callbacks' epoch logs have them", async () => {
    const model = compiled();
    const logs: Array<Record<string, number>> = [];
    const run = await c.fit(model, ds, { ...o, validationData: tensors(held), callbacks: { onEpochEnd: async (_e, l) => void logs.push({ ...(l as Record<string, number>) }) } });
    const ref = compiled();
    const [x, y] = tensors(ds);
    const h = await ref.fit(x, y, { ...o, verbose: 0, validationData: tensors(held) });
    sameHistory(run.byEpoch.history, h.history as Record<string, number[]>);
    assert.deepEqual(logs.map((l) => Object.keys(l).sort()), [0, 1, 2].map(() => ["acc", "loss", "val_acc", "val_loss"]));
    assert.ok(maxRelativeDifference(model, ref) < 1e-4);
  });

  test("validationSplit: the last quarter, cut before shuffling, validated on; the rest trained on", async () => {
    const model = compiled();
    const run = await c.fit(model, ds, { ...o, validationSplit: 0.25 });
    const ref = compiled();
    const [x, y] = tensors(ds);
    const h = await ref.fit(x, y, { ...o, verbose: 0, validationSplit: 0.25 });
    sameHistory(run.byEpoch.history, h.history as Record<string, number[]>);
    assert.equal(run.history.reduce((n, s) => n + s.samples, 0), 3 * 30, "30 of 40 samples trained on each epoch");
  });

  test("verbose 2 prints one line per epoch with the History's values, validation included; verbose with progress is refused", async () => {
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (typeof chunk === "string" && chunk.startsWith("Epoch ")) lines.push(chunk);
      return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stderr.write;
    let run;
    try {
      run = await c.fit(compiled(), ds, { ...o, verbose: 2, validationData: held });
    } finally {
      process.stderr.write = write;
    }
    assert.equal(lines.length, 3, lines.join(""));
    const h = run.byEpoch.history;
    lines.forEach((line, e) => {
      assert.match(line, new RegExp(`^Epoch ${e + 1} / 3: \\d+ ms, `));
      for (const k of ["loss", "acc", "val_loss", "val_acc"]) assert.ok(line.includes(`${k}=${h[k]![e]!.toFixed(4)}`), `${k} ${h[k]![e]} in ${line}`);
    });
    await assert.rejects(c.fit(compiled(), ds, { ...o, verbose: 0, progress: true }), (e: unknown) => e instanceof ConfigError && /both given/.test(e.message));
  });

  test("early stopping on val_loss (its default monitor) ends the fit after the epoch model.fit's ends after", async () => {
    const model = compiled();
    const run = await c.fit(model, ds, { ...o, epochs: 6, validationData: held, callbacks: tf.callbacks.earlyStopping({ minDelta: 10 }) });
    const ref = compiled();
    const [x, y] = tensors(ds);
    const h = await ref.fit(x, y, { ...o, epochs: 6, verbose: 0, validationData: tensors(held), callbacks: tf.callbacks.earlyStopping({ minDelta: 10 }) });
    assert.equal(run.byEpoch.epoch.length, h.epoch.length);
    assert.equal(run.byEpoch.epoch.length, 2);
    assert.ok(maxRelativeDifference(model, ref) < 1e-4);
    // The summary says how far it went and what ended it.
    assert.match(String(run), /steps over 2 of 6 epoch\(s\), .*; ended by a callback \(model\.stopTraining\)/);
    const full = await c.fit(compiled(), ds, { ...o, epochs: 2 });
    assert.match(String(full), /steps over 2 epoch\(s\), [^\n;]*\n/);
  });
});

const elsewhere: Array<{ name: string; build: () => ReturnType<typeof cluster> }> = [
  { name: "a 2-stage pipeline", build: () => cluster().workers(2).strategy("pipeline", { microBatches: 2 }) },
  { name: "a 2 x 2 hybrid", build: () => cluster().workers(4).strategy("hybrid", { stages: 2, microBatches: 2 }) },
  { name: "sync parameter servers", build: () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }) },
];

for (const setup of elsewhere) {
  test(`validation under ${setup.name}: History equals model.fit's, val_loss and val_acc included`, async () => {
    const c = await setup.build().launch();
    try {
      const p = { ...o, batchSize: 8 };
      const model = compiled();
      const run = await c.fit(model, ds, { ...p, validationData: held });
      const ref = compiled();
      const [x, y] = tensors(ds);
      const h = await ref.fit(x, y, { ...p, verbose: 0, validationData: tensors(held) });
      sameHistory(run.byEpoch.history, h.history as Record<string, number[]>);
      assert.ok(maxRelativeDifference(model, ref) < 1e-4);
    } finally {
      await c.close();
    }
  });
}

test("async parameter servers (1 worker: model.fit's order) validate at each epoch's end on the servers' weights; pipelines refuse accumulation", async () => {
  const a = await cluster().workers(1).ps(1).strategy("ps", { mode: "async" }).launch();
  try {
    const model = compiled();
    const run = await a.fit(model, ds, { ...o, validationData: held });
    const ref = compiled();
    const [x, y] = tensors(ds);
    const h = await ref.fit(x, y, { ...o, verbose: 0, validationData: tensors(held) });
    // Async records rounds of pushes, not model.fit's batches: the validation's entries are compared.
    const want = h.history as Record<string, number[]>;
    for (const k of ["val_loss", "val_acc"]) want[k]!.forEach((w, e) => assert.ok(Math.abs(run.byEpoch.history[k]![e]! - w) <= TOLERANCE * Math.max(1, Math.abs(w)), `epoch ${e}: ${k} ${run.byEpoch.history[k]![e]} vs model.fit's ${w}`));
    assert.ok(maxRelativeDifference(model, ref) < 1e-4);
  } finally {
    await a.close();
  }
  const c = await cluster().workers(2).strategy("pipeline").launch();
  try {
    await assert.rejects(c.fit(compiled(), ds, { ...o, validationSplit: 0.2, validationData: held }), (e: unknown) => e instanceof ConfigError && /both given/.test(e.message));
    await assert.rejects(c.fit(compiled(), ds, { ...o, accumulate: 2 }), (e: unknown) => e instanceof ConfigError && /raise microBatches/.test(e.message));
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
});
