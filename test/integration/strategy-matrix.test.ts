import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type ClusterBuilder } from "../../sdk/index";
import { DataError } from "../../sdk/errors/errors";
import { LearnedScale } from "../helpers/custom-layers";
import { maxRelativeDifference } from "../helpers/models";
import { slicedReference } from "../helpers/sliced-reference";

/**
 * The README's table of what each strategy takes, cell by cell through worker processes: one
 * functional model (tf.model, a chain) holding BatchNormalization, a custom layer from
 * .modules() and a frozen layer trains under data, sync and async parameter servers and a
 * pipeline as the one-process reference of the same slices and micro-batches; the frozen
 * layer's weights come back bit-identical; a model with two inputs is refused by each.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const LAYERS = path.join(__dirname, "..", "helpers", "custom-layers.js");
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 27, seed: 13 });
const o = { epochs: 2, batchSize: 8, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 9 };

function userModel(): tf.LayersModel {
  const input = tf.input({ shape: [6] });
  let h = tf.layers.dense({ units: 8, useBias: false, kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }).apply(input) as tf.SymbolicTensor;
  h = tf.layers.batchNormalization({ momentum: 0.8 }).apply(h) as tf.SymbolicTensor;
  h = tf.layers.activation({ activation: "relu" }).apply(h) as tf.SymbolicTensor;
  h = new LearnedScale({}).apply(h) as tf.SymbolicTensor;
  h = tf.layers.dense({ units: 8, activation: "tanh", trainable: false, name: "frozen", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }), biasInitializer: tf.initializers.constant({ value: 0.1 }) }).apply(h) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) }).apply(h) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: out });
}

function twoInputs(): tf.LayersModel {
  const a = tf.input({ shape: [3] });
  const b = tf.input({ shape: [3] });
  const joined = tf.layers.concatenate().apply([a, b]) as tf.SymbolicTensor;
  return tf.model({ inputs: [a, b], outputs: tf.layers.dense({ units: 3, activation: "softmax" }).apply(joined) as tf.SymbolicTensor });
}

const setups: Array<{ name: string; build: () => ClusterBuilder; replicas: number; microBatches: number }> = [
  { name: "data, 2 workers", build: () => cluster().workers(2).strategy("data"), replicas: 2, microBatches: 1 },
  { name: "sync parameter servers, 2 workers, 1 server", build: () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }), replicas: 2, microBatches: 1 },
  { name: "async parameter servers, 1 worker, 1 server", build: () => cluster().workers(1).ps(1).strategy("ps", { mode: "async" }), replicas: 1, microBatches: 1 },
  { name: "pipeline, 2 stages, 2 micro-batches", build: () => cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }), replicas: 1, microBatches: 2 },
];

for (const setup of setups) {
  test(`${setup.name}: a functional model with BatchNormalization, a custom layer and a frozen layer equals the reference; a two-input model given one input column is refused`, async () => {
    const c = await setup.build().backend("cpu").modules([LAYERS]).launch();
    try {
      const model = userModel();
      const frozen = model.getLayer("frozen").getWeights().map((w) => w.dataSync().slice());
      await c.fit(model, ds, o);
      const reference = userModel();
      slicedReference(reference, ds, { ...o, replicas: setup.replicas, microBatches: setup.microBatches });
      const diff = maxRelativeDifference(model, reference);
      assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
      assert.deepEqual(model.getLayer("frozen").getWeights().map((w) => w.dataSync()), frozen, "the frozen layer is bit-identical");
      const two = datasets.fromTensors(tf.randomUniform([8, 6]), tf.oneHot(tf.zeros([8], "int32"), 3));
      await assert.rejects(c.fit(twoInputs(), two, { batchSize: 4 }), (e: unknown) => e instanceof DataError && /takes 2 input\(s\)/.test(e.message) && /1 input and 1 target column/.test(e.message));
      assert.equal(c.state, "ready");
    } finally {
      await c.close();
    }
  });
}
