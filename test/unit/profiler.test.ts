import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { profileModel } from "../../sdk/roles/profiler";
import { feedOf, sampleInput } from "../../sdk/roles/profile-feed";
import { summarizeModel } from "../../sdk/plan/model-summary";
import type { MessageOf } from "../../sdk/protocol/messages";
import type { LossName } from "../../sdk/protocol/loss-names";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";

/**
 * The profile a worker takes, run in this process on the models whose profiles failed: merges
 * (a residual block with BatchNormalization), Embedding ids, and a recurrent stack under a budget.
 */

function request(model: tf.LayersModel, loss: LossName, extra: Partial<MessageOf<"profile">> = {}): MessageOf<"profile"> {
  return { type: "profile", v: PROTOCOL_VERSION, id: 1, topology: model.toJSON(null, false) as unknown as Record<string, unknown>, optimizer: { name: "sgd", learningRate: 0.1 }, loss, batches: [2, 8], ...extra };
}

function residual(): tf.LayersModel {
  const input = tf.input({ shape: [6, 6, 2] });
  const a = tf.layers.conv2d({ filters: 2, kernelSize: 3, padding: "same" }).apply(input) as tf.SymbolicTensor;
  const n = tf.layers.batchNormalization().apply(a) as tf.SymbolicTensor;
  const sum = tf.layers.add().apply([input, n]) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: 3, activation: "softmax" }).apply(tf.layers.flatten().apply(tf.layers.activation({ activation: "relu" }).apply(sum))) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: out });
}

function embedded(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.embedding({ inputDim: 50, outputDim: 4, inputLength: 5 }), tf.layers.flatten(), tf.layers.dense({ units: 1, activation: "sigmoid" })] });
}

function timesOk(p: Awaited<ReturnType<typeof profileModel>>, layers: number): void {
  assert.equal(p.layers.length, layers);
  for (const l of p.layers) {
    assert.equal(l.forwardMs.length, 2);
    for (const t of [...l.forwardMs, ...l.backwardMs]) assert.ok(Number.isFinite(t) && t >= 0, `layer time ${t}`);
  }
  assert.equal(p.replicaStepMs.length, 2);
  assert.ok(p.replicaStepMs.every((t) => Number.isFinite(t) && t > 0));
}

test("a residual block with BatchNormalization: each layer is timed on the inputs its node takes (the merge on both)", async () => {
  const m = residual();
  timesOk(await profileModel(request(m, "categoricalCrossentropy"), null), summarizeModel(m).layers.length);
  m.dispose();
});

test("an Embedding is fed integer ids below its input dimension, in the layers' timing and the step's", async () => {
  const m = embedded();
  const feed = feedOf(m);
  assert.deepEqual(feed.inputs, [{ shape: [5], idsBelow: 50 }]);
  const x = sampleInput(feed.inputs[0]!, 64);
  assert.ok(x.data.every((v) => Number.isInteger(v) && v >= 0 && v < 50));
  timesOk(await profileModel(request(m, "binaryCrossentropy"), null), summarizeModel(m).layers.length);
  m.dispose();
});

test("asked for a PowerSGD rank, the profile times PowerSGD's own work on the model's gradient; not asked, it does not", async () => {
  const m = tf.sequential({ layers: [tf.layers.dense({ inputShape: [64], units: 64 }), tf.layers.dense({ units: 4 })] });
  const timed = await profileModel(request(m, "meanSquaredError", { layers: false, hook: { kind: "powersgd", rank: 2 } }), null);
  assert.ok(timed.hookMs !== undefined && Number.isFinite(timed.hookMs) && timed.hookMs > 0, `PowerSGD's work: ${timed.hookMs}`);
  assert.equal((await profileModel(request(m, "meanSquaredError", { layers: false }), null)).hookMs, undefined);
  m.dispose();
});

test("asked for a local-SGD outer optimizer, the profile times a sync's own work on the model; not asked, it does not", async () => {
  const m = tf.sequential({ layers: [tf.layers.dense({ inputShape: [64], units: 64 }), tf.layers.dense({ units: 4 })] });
  const timed = await profileModel(request(m, "meanSquaredError", { layers: false, sum: { kind: "local", outer: { name: "momentum", learningRate: 0.7, momentum: 0.9, useNesterov: true } } }), null);
  assert.ok(timed.sumMs !== undefined && Number.isFinite(timed.sumMs) && timed.sumMs > 0, `a sync's work: ${timed.sumMs}`);
  assert.equal((await profileModel(request(m, "meanSquaredError", { layers: false }), null)).sumMs, undefined);
  // A scheme without work of its own to time (ZeRO-1's is the update's) has no probe: nothing timed.
  assert.equal((await profileModel(request(m, "meanSquaredError", { layers: false, sum: { kind: "zero-1", over: 2 } }), null)).sumMs, undefined);
  m.dispose();
});

test("layers: false times the replica step alone; a spent budget still times everything once", async () => {
  const m = tf.sequential({ layers: [tf.layers.lstm({ units: 8, returnSequences: true, inputShape: [6, 3] }), tf.layers.lstm({ units: 8 }), tf.layers.dense({ units: 2, activation: "softmax" })] });
  const stepOnly = await profileModel(request(m, "categoricalCrossentropy", { layers: false }), null);
  assert.deepEqual(stepOnly.layers, []);
  assert.equal(stepOnly.replicaStepMs.length, 2);
  timesOk(await profileModel(request(m, "categoricalCrossentropy", { budgetMs: 1 }), null), 3);
  m.dispose();
});

test("under a cap too small for the whole step, the layers are timed and the step is not, saying why; tighter still, nothing is", async () => {
  // 3 x 256 x 256 weights: 0.75 MiB; with Adam's state and the gradient a whole step needs 3 MiB, and the runtime's growth in a fit 2.4 more.
  const m = tf.sequential({ layers: [256, 256, 256].map((units, i) => tf.layers.dense({ units, ...(i === 0 ? { inputShape: [256] } : {}) })) });
  const adam = { optimizer: { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } };
  const capped = await profileModel(request(m, "meanSquaredError", adam), 4.4 * 2 ** 20);
  assert.deepEqual(capped.replicaStepMs, []);
  assert.match(capped.replicaStep.why ?? "", /^not timed: the whole model needs 5\.\d MiB for a step of 8 samples, above the 4\.4 MiB this worker may use$/);
  assert.equal(capped.layers.length, 3);
  assert.ok(capped.layers.every((l) => l.forwardMs.length === 2 && [...l.forwardMs, ...l.backwardMs].every((t) => Number.isFinite(t) && t >= 0)));
  // The weights and the largest layer's gradient (1 MiB) with the runtime's growth do not fit 3.3 MiB: not timed at all.
  await assert.rejects(profileModel(request(m, "meanSquaredError", adam), 3.3 * 2 ** 20), /the whole model needs .* so it was not timed here/);
  // Nor is a step-only profile (a data plan's, which has no use for the layers).
  await assert.rejects(profileModel(request(m, "meanSquaredError", { ...adam, layers: false }), 4.4 * 2 ** 20), /so it was not timed here/);
  m.dispose();
});
