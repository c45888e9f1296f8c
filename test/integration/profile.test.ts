import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";

function model(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [8, 8, 1], filters: 4, kernelSize: 3, activation: "relu" }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 16, activation: "relu" }),
      tf.layers.dense({ units: 3, activation: "softmax" }),
    ],
  });
}

/** A residual block with BatchNormalization: an add() merge, whose profile once failed on every worker. */
function residual(): tf.LayersModel {
  const input = tf.input({ shape: [4, 4, 2] });
  const n = tf.layers.batchNormalization().apply(tf.layers.conv2d({ filters: 2, kernelSize: 3, padding: "same" }).apply(input)) as tf.SymbolicTensor;
  const sum = tf.layers.add().apply([input, n]) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: tf.layers.dense({ units: 3, activation: "softmax" }).apply(tf.layers.flatten().apply(sum)) as tf.SymbolicTensor });
}

/** Ids into a 50-word Embedding: random normal values there were out of range. */
function embedded(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.embedding({ inputDim: 50, outputDim: 4, inputLength: 5 }), tf.layers.flatten(), tf.layers.dense({ units: 2, activation: "softmax" })] });
}

test("a worker times the model's layers and replica step, and plan() and fit() predict from that profile", { timeout: 180_000 }, async () => {
  const c = await cluster().workers(2).strategy("data").launch();
  try {
    const m = model();
    assert.match(c.plan(m, { batchSize: 32 }).prediction!.basis, /no profile was taken.*the all-reduce priced at those links' speed \(the data ring was not measured\)/);
    const p = await c.profile(m, { batchSize: 32, loss: "categoricalCrossentropy" });
    assert.deepEqual(p.batches, [4, 32]);
    assert.equal(p.layers.length, summarizeModel(m).layers.length);
    for (const l of p.layers) for (const t of [...l.forwardMs, ...l.backwardMs]) assert.ok(Number.isFinite(t) && t >= 0, `layer time ${t}`);
    assert.equal(p.replicaStepMs.length, 2);
    assert.ok(p.replicaStepMs.every((t) => Number.isFinite(t) && t > 0));
    assert.deepEqual(p.replicaStep, { native: true });
    assert.match(c.plan(m, { batchSize: 32 }).prediction!.basis, /timed on rank \d \(native\) at batches 4 and 32/);
    // profile() also timed the data ring the fit will use: plans price the all-reduce by it, not by the driver's links.
    // Which plane that ring takes is timed too (a loaded machine once made the WebSocket links faster): either is right.
    assert.match(c.plan(m, { batchSize: 32 }).prediction!.basis, /the all-reduce priced by the data ring itself \((native|websocket), measured on its 2 members: \d+ MB\/s a hop/);
    // Another batch was not timed: that plan says so rather than reuse a profile that does not fit it.
    assert.match(c.plan(m, { batchSize: 16 }).prediction!.basis, /no profile was taken/);
    const data = datasets.synthetic({ inputShape: [8, 8, 1], classes: 3, size: 64, seed: 3 });
    const run = await c.fit(m, data, { epochs: 1, batchSize: 16, loss: "categoricalCrossentropy", optimizer: { name: "sgd", learningRate: 0.01 } });
    assert.match(run.plan.prediction!.basis, new RegExp(`timed on rank \\d \\(native\\) at batches 2 and 16.*priced by the data ring itself \\(${run.dataPlane!.path}`));
    // Data parallelism plans from the replica step alone: its fit timed nothing else.
    assert.match(run.plan.prediction!.basis, /the model's step timed on rank/);
    assert.equal(run.history.length, 4);
    // Models whose profile failed on a worker before (a merge, Embedding ids) are timed, and nothing is said on stderr.
    const said: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => (said.push(String(chunk)), write(chunk, ...rest))) as typeof process.stderr.write;
    try {
      const r1 = await c.fit(residual(), datasets.synthetic({ inputShape: [4, 4, 2], classes: 3, size: 32, seed: 4 }), { epochs: 1, batchSize: 16, loss: "categoricalCrossentropy", optimizer: "sgd" });
      const ids = datasets.fromTensors(tf.randomUniform([32, 5], 0, 50, "int32").toFloat(), tf.oneHot(tf.randomUniform([32], 0, 2, "int32"), 2).toFloat());
      const r2 = await c.fit(embedded(), ids, { epochs: 1, batchSize: 16, loss: "categoricalCrossentropy", optimizer: "sgd" });
      for (const r of [r1, r2]) assert.match(r.plan.prediction!.basis, /the model's step timed on rank/);
    } finally {
      process.stderr.write = write;
    }
    assert.doesNotMatch(said.join(""), /timing it on a worker failed/);
  } finally {
    await c.close();
  }
});

test("under dataPlane auto a fit times the ring on both planes, keeps the faster, says why in its plan and notes, and still equals model.fit", { timeout: 180_000 }, async () => {
  const c = await cluster().workers(2).strategy("data").launch();
  try {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 48, seed: 3 });
    const [distributed, single] = [smallClassifier(6, 3), smallClassifier(6, 3)];
    const o = { epochs: 2, batchSize: 16, optimizer: { name: "sgd", learningRate: 0.05 } as const, shuffle: false, seed: 1 };
    const run = await c.fit(distributed, ds, { ...o, loss: "categoricalCrossentropy" });
    const timed = /both planes timed on this ring[^)]*\(1 MiB ([\d.]+) ms native, ([\d.]+) ms over WebSockets; 16 MiB ([\d.]+) ms native, ([\d.]+) ms over WebSockets\)/;
    const said = timed.exec(run.dataPlane?.why ?? "");
    assert.ok(said, `the run's data plane: ${run.dataPlane?.path}, ${run.dataPlane?.why}`);
    const [n1, w1, n16, w16] = said.slice(1).map(Number) as [number, number, number, number];
    // The plane kept is the one the times say: the WebSocket links only when 1.2x faster at both sizes.
    assert.equal(run.dataPlane?.path, w1 * 1.2 <= n1 && w16 * 1.2 <= n16 ? "websocket" : "native");
    assert.match(run.plan.prediction!.basis, new RegExp(`priced by the data ring itself \\(${run.dataPlane!.path}, measured on its 2 members: .*; ${run.dataPlane!.path} because both planes timed on this ring`));
    // Re-wired twice for the timing, the ring trains as model.fit does.
    await modelFitReference(single, ds, o);
    assert.ok(maxRelativeDifference(distributed, single) < 1e-4, `relative difference ${maxRelativeDifference(distributed, single)}`);
    // A second fit on the same wiring keeps the choice without timing again.
    const again = await c.fit(smallClassifier(6, 3), ds, { ...o, epochs: 1, loss: "categoricalCrossentropy" });
    assert.deepEqual(again.dataPlane, run.dataPlane);
  } finally {
    await c.close();
  }
});

test("a fit over the WebSocket data plane times that ring before planning, and prices its all-reduce by it", { timeout: 180_000 }, async () => {
  const c = await cluster().workers(2).strategy("data").dataPlane("websocket").launch();
  try {
    const m = model();
    const data = datasets.synthetic({ inputShape: [8, 8, 1], classes: 3, size: 32, seed: 3 });
    const run = await c.fit(m, data, { epochs: 1, batchSize: 16, loss: "categoricalCrossentropy", optimizer: { name: "sgd", learningRate: 0.01 } });
    assert.match(run.plan.prediction!.basis, /priced by the data ring itself \(websocket, measured on its 2 members: \d+ MB\/s a hop, [\d.]+ ms a phase\)/);
    // Each worker said what the ring's all-reduces cost its CPU: the plan holds that against its core.
    assert.match(run.plan.prediction!.basis, /each worker's CPU for its all-reduces as the ring probe timed it/);
    // The ring's timed all-reduces left the workers' all-reduce count in step: training went on over the same ring.
    assert.equal(run.history.length, 2);
    assert.equal(run.dataPlane?.path, "websocket");
  } finally {
    await c.close();
  }
});
