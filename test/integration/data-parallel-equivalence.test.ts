import assert from "node:assert/strict";
import * as os from "node:os";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type StepRecord } from "../../sdk/index";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { maxRelativeDifference, smallClassifier, weightsMoved } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";

/**
 * Data-parallel training over real worker processes and real WebSockets must give the weights
 * single-process model.fit gives on the same batches. The dataset size makes the last batch of
 * each epoch shorter than the others and uneven across replicas.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;


async function compare(
  c: Cluster,
  o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; shuffle: boolean; seed: number; l2?: number; size: number; plane?: "native" | "websocket"; nativeStep?: boolean },
): Promise<void> {
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: o.size, seed: 3 });
  const distributed = smallClassifier(6, 3, { l2: o.l2 });
  const single = smallClassifier(6, 3, { l2: o.l2 });
  assert.equal(maxRelativeDifference(distributed, single), 0, "both copies start equal");
  const before = distributed.getWeights().map((w) => w.clone());
  const steps: StepRecord[] = [];
  const { epochs, batchSize, optimizer, shuffle, seed } = o;
  const run = await c.fit(distributed, ds, { epochs, batchSize, optimizer, shuffle, seed, loss: "categoricalCrossentropy", onStep: (s) => steps.push(s) });
  assert.equal(run.dataPlane?.path, c.size > 1 ? o.plane : undefined, `the all-reduce ran over ${run.dataPlane?.path}: ${run.dataPlane?.why}`);
  if (o.nativeStep !== undefined) assert.equal(run.replicaStep?.native, o.nativeStep, `replica step: ${run.replicaStep?.why ?? "native"}`);
  const refLosses = await modelFitReference(single, ds, o);
  assert.ok(weightsMoved(before, distributed), "training changed the weights");
  const diff = maxRelativeDifference(distributed, single);
  assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
  assert.equal(run.history.length, refLosses.length);
  assert.deepEqual(steps, run.history);
  // model.fit's History counts the regularizers in the loss; so does every step's record.
  run.history.forEach((s, i) => {
    assert.ok(Math.abs(s.loss - refLosses[i]!) <= TOLERANCE * Math.max(1, Math.abs(refLosses[i]!)), `step ${i}: loss ${s.loss} vs ${refLosses[i]}`);
  });
  const last = run.history[run.history.length - 1]!;
  assert.equal(last.samples, o.size - (Math.ceil(o.size / o.batchSize) - 1) * o.batchSize);
  assert.equal(last.workers.length, c.size);
}

// Both data planes: the native one (TCP, reduced in C) that runs by default, and the WebSocket
// links that run under TLS or without the addon.
for (const [n, plane] of [[2, "native"], [3, "native"], [2, "websocket"], [3, "websocket"]] as const) {
  describe(`${n} worker processes, all-reduce over the ${plane} data plane`, () => {
    let c: Cluster;
    before(async () => {
      c = await cluster().workers(n).strategy("data").backend("cpu").dataPlane(plane).launch();
    });
    after(async () => {
      await c?.close();
    });

    test("SGD equals model.fit on the same batches", async () => {
      await compare(c, { epochs: 2, batchSize: 4 * n, optimizer: { name: "sgd", learningRate: 0.3 }, shuffle: false, seed: 0, size: 29, plane });
    });

    test("Adam equals model.fit on the same batches", async () => {
      await compare(c, { epochs: 2, batchSize: 4 * n, optimizer: { name: "adam", learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, shuffle: false, seed: 0, size: 29, plane });
    });

    test("seeded shuffling equals model.fit on the same permutation", async () => {
      await compare(c, { epochs: 2, batchSize: 2 * n, optimizer: { name: "momentum", learningRate: 0.1, momentum: 0.9, useNesterov: false }, shuffle: true, seed: 11, size: 17, plane });
    });

    test("a regularizer's gradient is counted once, not once per replica", async () => {
      await compare(c, { epochs: 1, batchSize: 3 * n, optimizer: { name: "rmsprop", learningRate: 0.01, decay: 0.9, momentum: 0, centered: false }, shuffle: false, seed: 0, l2: 0.05, size: 20, plane });
    });
  });
}

test("one worker trains like model.fit too (no all-reduce at all)", async () => {
  const c = await cluster().workers(1).backend("cpu").launch();
  try {
    await compare(c, { epochs: 1, batchSize: 5, optimizer: { name: "sgd", learningRate: 0.2 }, shuffle: false, seed: 0, size: 13 });
  } finally {
    await c.close();
  }
});

test("workers that read their own shards (feed: workers) train exactly as when the driver feeds them", async () => {
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 26, seed: 5 });
  const o = { epochs: 2, batchSize: 6, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, shuffle: true, seed: 4 };
  const c = await cluster().workers(3).strategy("data", { feed: "workers" }).launch();
  try {
    const distributed = smallClassifier(6, 3);
    const single = smallClassifier(6, 3);
    const run = await c.fit(distributed, ds, { ...o, loss: "categoricalCrossentropy" });
    await modelFitReference(single, ds, o);
    const diff = maxRelativeDifference(distributed, single);
    assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
    assert.equal(run.plan.strategy === "data" && run.plan.feed, "workers");
    // Data only the driver has cannot be read by the workers: refused before anything is sent.
    const x = tf.randomNormal([12, 6]);
    const y = tf.oneHot(tf.tensor1d([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2], "int32"), 3).toFloat();
    await assert.rejects(c.fit(smallClassifier(6, 3), datasets.fromTensors(x, y), { batchSize: 6 }), /feed "workers" needs a dataset the workers can load themselves/);
    assert.equal(c.state, "ready");
  } finally {
    await c.close();
  }
});

test("by default (native kernels and step, native data plane) data parallelism still equals stock model.fit, with every optimizer TF.js has", async () => {
  const c = await cluster().workers(2).launch();
  try {
    assert.ok(c.workers.every((w) => w.info.backend === "native"), c.workers.map((w) => w.info.backend).join(","));
    await compare(c, { epochs: 2, batchSize: 8, optimizer: { name: "sgd", learningRate: 0.3 }, shuffle: false, seed: 0, size: 29, plane: "native", nativeStep: true });
    await compare(c, { epochs: 2, batchSize: 8, optimizer: { name: "adam", learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, shuffle: true, seed: 9, size: 29, plane: "native", nativeStep: true });
    // An L2 regularizer's penalty and gradient, in the native step too (model.fit's History counts the penalty).
    await compare(c, { epochs: 1, batchSize: 8, optimizer: { name: "sgd", learningRate: 0.3 }, shuffle: false, seed: 0, size: 29, plane: "native", l2: 0.01, nativeStep: true });
    // Optimizers without native kernels run as TF.js's own, on the native backend.
    await compare(c, { epochs: 2, batchSize: 8, optimizer: { name: "adagrad", learningRate: 0.2, initialAccumulatorValue: 0.1 }, shuffle: true, seed: 3, size: 29, plane: "native", nativeStep: true });
    await compare(c, { epochs: 2, batchSize: 8, optimizer: { name: "adadelta", learningRate: 1, rho: 0.95 }, shuffle: true, seed: 3, size: 29, plane: "native", nativeStep: true });
    await compare(c, { epochs: 2, batchSize: 8, optimizer: { name: "adamax", learningRate: 0.02, beta1: 0.9, beta2: 0.999, decay: 0.01 }, shuffle: true, seed: 3, size: 29, plane: "native", nativeStep: true });
  } finally {
    await c.close();
  }
});

/** 64 -> 1024 -> 300 -> 10: the last two layers' 1.2 MB of gradient fill DDP's first bucket. */
function bucketed(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ units: 1024, inputShape: [64], activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 21 }) }),
      tf.layers.dense({ units: 300, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 22 }) }),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 23 }) }),
    ],
  });
}

test("gradients all-reduced in buckets while the backward pass runs equal model.fit, and compressed, the WebSocket path's bits", async () => {
  const ds = datasets.synthetic({ inputShape: [64], classes: 10, size: 40, seed: 6 });
  const o = { epochs: 2, batchSize: 12, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 }, shuffle: true, seed: 2 };
  const fit = { ...o, loss: "categoricalCrossentropy" as const };
  const single = bucketed();
  await modelFitReference(single, ds, o);
  const values = single.countParams();
  const runs: Record<string, tf.LayersModel> = {};
  // Local workers share this machine's cores: overlap "auto" is on only with a core to spare for each one.
  const spare = os.availableParallelism() > 2;
  const cases = [["native", 2, "native", undefined, true], ["native fp16", 2, "native", "fp16", true], ["websocket fp16", 2, "websocket", "fp16", true], ["native, overlap auto", 2, "native", undefined, "auto"]] as const;
  for (const [name, workers, plane, compression, overlap] of cases) {
    const c = await cluster().workers(workers).strategy("data", { overlap, ...(compression ? { compression } : {}) }).dataPlane(plane).launch();
    try {
      const model = bucketed();
      const run = await c.fit(model, ds, fit);
      runs[name] = model;
      assert.equal(run.replicaStep?.native, true, "the native step, which announces its gradients layer by layer");
      if (plane === "native" && workers === 2) {
        // Each all-reduce sends one 32-byte header per worker (2 workers: every value once, the flag in float32):
        // overlapped, the first bucket (the last two layers), the rest of the gradient, then the flag; else one.
        const ops = (run.history[0]!.workers[0]!.sentBytes! - (compression ? 2 : 4) * values - 4) / 32;
        const overlapped = overlap === true || spare;
        assert.equal(ops, overlapped ? 3 : 1, `${name}: ${ops} all-reduce operations`);
        assert.match(String(run), overlapped ? /overlap: the gradient was all-reduced in buckets/ : /no overlap: one all-reduce after the backward pass: no core to spare/);
      }
    } finally {
      await c.close();
    }
  }
  for (const name of ["native", "native, overlap auto"]) {
    const diff = maxRelativeDifference(runs[name]!, single);
    assert.ok(diff < TOLERANCE, `${name}: relative difference ${diff}`);
  }
  assert.equal(maxRelativeDifference(runs["native fp16"]!, runs["websocket fp16"]!), 0, "bucketed and whole compressed all-reduces end with the same bits (2 workers: one addition per value)");
});

test("overlap 'auto' with no core to spare times its steps 3-18 both ways, each as sent, and keeps the faster: the fit equals model.fit either way", async (t) => {
  // 80 steps: enough for the trial (76 or more).
  const ds = datasets.synthetic({ inputShape: [64], classes: 10, size: 960, seed: 6 });
  const o = { epochs: 1, batchSize: 12, optimizer: { name: "sgd" as const, learningRate: 0.05 }, shuffle: true, seed: 2 };
  const single = bucketed();
  await modelFitReference(single, ds, o);
  const values = single.countParams();
  const c = await cluster().workers(2).strategy("data").dataPlane("native").launch();
  try {
    const model = bucketed();
    const run = await c.fit(model, ds, { ...o, loss: "categoricalCrossentropy" });
    // Each step's all-reduces from what rank 0 sent (one 32-byte header each): 3 in buckets, 1 after the pass.
    const ops = run.history.map((s) => (s.workers[0]!.sentBytes! - 4 * values - 4) / 32);
    const line = run.notes.find((l) => /overlap/.test(l)) ?? "";
    if (os.availableParallelism() > 2) {
      // A core to spare for each worker: the rule turns overlap on, with nothing to time.
      assert.ok(ops.every((n) => n === 3), ops.join(" "));
      assert.match(line, /^overlap: the gradient was all-reduced in buckets/);
    } else {
      const trial = Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 3 : 1));
      assert.deepEqual(ops.slice(0, 19), [1, 1, 1, ...trial], "the warm-up as the rule chose, then alternating as sent");
      const m = /timed both ways, in buckets during the backward pass ([\d.]+) ms a step, one all-reduce after it ([\d.]+) ms \(each way's median on the slower replica, steps 3-18 alternating\): (buckets|one all-reduce after the backward pass) kept from step (\d+)/.exec(line);
      assert.ok(m, line);
      const [onMs, offMs, kept, from] = [Number(m[1]), Number(m[2]), m[3], Number(m[4])];
      assert.equal(kept === "buckets", onMs * 1.03 <= offMs, `kept ${kept} at ${onMs} against ${offMs} ms`);
      // The steps sent before step 18 ended keep the rule's choice; from the kept one's first step, all go its way.
      assert.ok(from >= 19 && from <= 21, `from step ${from}`);
      assert.ok(ops.slice(19, from).every((n) => n === 1) && ops.slice(from).every((n) => n === (kept === "buckets" ? 3 : 1)), ops.join(" "));
      // Each way's median of its steps' times on the slower replica, as the run's records hold them (the line rounds to 0.1 ms).
      // (A record's computeMs holds the update, applyMs.)
      const slower = (s: StepRecord) => Math.max(...s.workers.map((w) => w.computeMs + w.commMs + w.waitMs));
      const median = (steps: number[]) => { const xs = steps.map((s) => slower(run.history[s]!)).sort((a, b) => a - b); return (xs[3]! + xs[4]!) / 2; };
      assert.ok(Math.abs(median([3, 5, 7, 9, 11, 13, 15, 17]) - onMs) < 0.06, `buckets ${onMs} ms`);
      assert.ok(Math.abs(median([4, 6, 8, 10, 12, 14, 16, 18]) - offMs) < 0.06, `one all-reduce ${offMs} ms`);
      t.diagnostic(line);
    }
    const diff = maxRelativeDifference(model, single);
    assert.ok(diff < TOLERANCE, `relative difference ${diff}`);
  } finally {
    await c.close();
  }
});
