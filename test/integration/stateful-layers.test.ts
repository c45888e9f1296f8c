import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster } from "../../sdk/index";
import { maxRelativeDifference, weightsMoved } from "../helpers/models";
import { slicedReference } from "../helpers/sliced-reference";
import { batchNormClassifier } from "../helpers/stateful-models";

/**
 * Models with state beyond trainable weights (BatchNormalization's moving statistics) train
 * under data parallelism as under Keras' MirroredStrategy: each replica normalises with its own
 * slice's statistics and the moving statistics are averaged every step. The reference runs the
 * same slices in one process and averages the same way; every weight, moving statistics
 * included, must agree to 1e-4.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 27, seed: 5 });

describe("BatchNormalization under data parallelism, 2 worker processes", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  });
  after(async () => {
    await c?.close();
  });

  for (const optimizer of [{ name: "sgd", learningRate: 0.2 }, { name: "adam", learningRate: 0.02, beta1: 0.9, beta2: 0.999 }] as const) {
    test(`${optimizer.name}: weights and moving statistics equal the one-process reference of the same slices`, async () => {
      const distributed = batchNormClassifier();
      const single = batchNormClassifier();
      const start = distributed.getWeights().map((w) => w.clone());
      const o = { epochs: 2, batchSize: 8, optimizer, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 4 };
      const run = await c.fit(distributed, ds, o);
      const losses = slicedReference(single, ds, { ...o, replicas: 2 });
      assert.ok(weightsMoved(start, distributed), "training changed the weights");
      const movingMean = distributed.nonTrainableWeights[0]!.read().dataSync();
      assert.ok(movingMean.some((v) => v !== 0), "the moving mean moved from its initial zeros");
      const diff = maxRelativeDifference(distributed, single);
      assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
      run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) < TOLERANCE * Math.max(1, losses[i]!), `step ${i}: ${s.loss} vs ${losses[i]}`));
    });
  }

  test("the reference can tell: statistics of one replica only differ from the average", async () => {
    const averaged = batchNormClassifier();
    const oneReplica = batchNormClassifier();
    const o = { epochs: 1, batchSize: 8, optimizer: { name: "sgd" as const, learningRate: 0.2 }, loss: "categoricalCrossentropy" as const, shuffle: false, seed: 0 };
    slicedReference(averaged, ds, { ...o, replicas: 2 });
    slicedReference(oneReplica, ds, { ...o, replicas: 1, microBatches: 2 });
    assert.ok(maxRelativeDifference(averaged, oneReplica) > 10 * TOLERANCE);
  });
});

/** Stages own their layers' statistics: updated once per micro-batch forward, never again by the recomputed forward. */
for (const setup of [
  { name: "pipeline, 2 stages, 1F1B", workers: 2, strategy: ["pipeline", { stages: 2, microBatches: 2, schedule: "1f1b" }] as const, replicas: 1 },
  { name: "hybrid, 2 stages x 2 replicas, GPipe", workers: 4, strategy: ["hybrid", { stages: 2, replicas: 2, microBatches: 2, schedule: "gpipe" }] as const, replicas: 2 },
]) {
  test(`BatchNormalization under ${setup.name}: equal to the reference of the same micro-batches`, async () => {
    const c = await cluster().workers(setup.workers).strategy(setup.strategy[0], setup.strategy[1] as never).backend("cpu").launch();
    try {
      const distributed = batchNormClassifier();
      const single = batchNormClassifier();
      const o = { epochs: 2, batchSize: 8, optimizer: { name: "momentum" as const, learningRate: 0.1, momentum: 0.9, useNesterov: false }, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 6 };
      const run = await c.fit(distributed, ds, o);
      const losses = slicedReference(single, ds, { ...o, replicas: setup.replicas, microBatches: 2 });
      const diff = maxRelativeDifference(distributed, single);
      assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
      run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) < TOLERANCE * Math.max(1, losses[i]!), `step ${i}: ${s.loss} vs ${losses[i]}`));
      const twice = batchNormClassifier();
      slicedReference(twice, ds, { ...o, replicas: setup.replicas, microBatches: 4 });
      assert.ok(maxRelativeDifference(twice, single) > 10 * TOLERANCE, "the reference tells micro-batch counts apart");
    } finally {
      await c.close();
    }
  });
}

/**
 * Parameter servers hold the moving statistics too: sync servers move them by the mean of the
 * workers' changes each step (the data-parallel reference of the same slices); an async server
 * adds each push's change (with one worker: the one-process reference of the same batches).
 */
for (const setup of [
  { name: "sync parameter servers (2 workers, 2 servers)", workers: 2, mode: "sync", replicas: 2 },
  { name: "async parameter servers (1 worker, 2 servers)", workers: 1, mode: "async", replicas: 1 },
] as const) {
  test(`BatchNormalization under ${setup.name}: weights and moving statistics equal the reference`, async () => {
    const c = await cluster().workers(setup.workers).ps(2).strategy("ps", { mode: setup.mode }).backend("cpu").launch();
    try {
      const distributed = batchNormClassifier();
      const single = batchNormClassifier();
      const o = { epochs: 2, batchSize: 8, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 8 };
      const run = await c.fit(distributed, ds, o);
      assert.ok(run.plan.strategy === "ps" && run.plan.servers.some((s) => s.state.length > 0), "a server holds the moving statistics");
      const losses = slicedReference(single, ds, { ...o, replicas: setup.replicas });
      const movingMean = distributed.nonTrainableWeights[0]!.read().dataSync();
      assert.ok(movingMean.some((v) => v !== 0), "the moving mean moved from its initial zeros");
      const diff = maxRelativeDifference(distributed, single);
      assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
      if (setup.mode === "sync") run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) < TOLERANCE * Math.max(1, losses[i]!), `step ${i}: ${s.loss} vs ${losses[i]}`));
    } finally {
      await c.close();
    }
  });
}
