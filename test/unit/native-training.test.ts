import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import type { NativeOptimizerSpec } from "../../sdk/compute/native-update";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { LossName } from "../../sdk/protocol/loss-names";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { assertClose, nativeAvailable, randomArray } from "../helpers/backends";
import { DataReplica } from "../../sdk/roles/data/replica";

/**
 * Whole training runs through the worker's own replica code: native kernels and the in-place
 * native optimizers against stock TF.js (cpu kernels, tf.train optimizers), same model, same data.
 */

tf.enableProdMode();
nativeAvailable();

const OPTIMIZERS: NativeOptimizerSpec[] = [
  { name: "sgd", learningRate: 0.1 },
  { name: "momentum", learningRate: 0.05, momentum: 0.9, useNesterov: true },
  // Adam's epsilon is raised from TF.js's 1e-7: with it, a weight whose gradient is ~1e-7 moves by
  // about learningRate in a direction float rounding decides (m / sqrt(v) of two tiny numbers), so
  // two correct backends differed by 1e-4 after 6 steps in one CI run. 1e-4 keeps the same code path.
  { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-4 },
  { name: "rmsprop", learningRate: 0.01, decay: 0.9, momentum: 0.5, centered: false },
];

interface Case {
  name: string;
  build(): tf.LayersModel;
  x: Tensorlike;
  y: Tensorlike;
  loss: LossName;
}

function mlp(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [12], units: 16, activation: "relu" }),
      tf.layers.dropout({ rate: 0.25, seed: 3 }),
      tf.layers.dense({ units: 8, activation: "tanh", kernelRegularizer: tf.regularizers.l2({ l2: 0.01 }) }),
      tf.layers.dense({ units: 4, activation: "softmax" }),
    ],
  });
}

function cnn(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [12, 12, 2], filters: 6, kernelSize: 3, strides: 2, padding: "same", activation: "relu" }),
      tf.layers.batchNormalization(),
      tf.layers.maxPooling2d({ poolSize: 2, strides: 1, padding: "same" }),
      tf.layers.separableConv2d({ filters: 5, kernelSize: 3, padding: "valid", activation: "elu" }),
      tf.layers.depthwiseConv2d({ kernelSize: 2, depthMultiplier: 2 }),
      tf.layers.averagePooling2d({ poolSize: 2 }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 3, activation: "softmax" }),
    ],
  });
}

function embedding(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.embedding({ inputDim: 20, outputDim: 5, inputLength: 6 }),
      tf.layers.globalAveragePooling1d(),
      tf.layers.dense({ units: 3, activation: "softmax" }),
    ],
  });
}

function oneHot(n: number, classes: number, seed: number): Float32Array {
  const y = new Float32Array(n * classes);
  const r = randomArray(n, seed, 0, classes);
  for (let i = 0; i < n; i++) y[i * classes + Math.floor(r[i]!)] = 1;
  return y;
}

const CASES: Case[] = [
  { name: "MLP with dropout and a regularizer", build: mlp, x: { data: randomArray(10 * 12, 5), shape: [10, 12] }, y: { data: oneHot(10, 4, 6), shape: [10, 4] }, loss: "categoricalCrossentropy" },
  { name: "CNN: strided conv, batch norm, pooling, separable and depthwise convs", build: cnn, x: { data: randomArray(6 * 12 * 12 * 2, 7), shape: [6, 12, 12, 2] }, y: { data: oneHot(6, 3, 8), shape: [6, 3] }, loss: "categoricalCrossentropy" },
  {
    name: "embedding with int32 token ids and sparse labels",
    build: embedding,
    x: { data: Int32Array.from(randomArray(8 * 6, 9, 0, 20), Math.floor), shape: [8, 6] },
    y: { data: Float32Array.from(randomArray(8, 10, 0, 3), Math.floor), shape: [8, 1] },
    loss: "sparseCategoricalCrossentropy",
  },
];

/** One model's topology and initial weights, shared by both runs. */
function start(c: Case): { topology: Record<string, unknown>; initial: Tensorlike[] } {
  tf.setBackend("cpu");
  const model = c.build();
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const initial = model.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  model.dispose();
  return { topology, initial };
}

async function train(backend: string, c: Case, from: ReturnType<typeof start>, optimizer: OptimizerSpec, steps: number): Promise<{ weights: Tensorlike[]; losses: number[] }> {
  const { topology, initial } = from;
  tf.setBackend(backend);
  const replica = await DataReplica.load({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer, loss: c.loss, replicaBatch: c.x.shape[0]!, stepTimeoutMs: 60_000, attachments: [] }, initial);
  const losses: number[] = [];
  const alone = async (data: Float32Array) => ({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  for (let i = 0; i < steps; i++) losses.push((await replica.train(1, c.x, c.y, alone)).loss);
  const weights = (await replica.weights()).tensors;
  replica.dispose();
  tf.setBackend("cpu");
  return { weights, losses };
}

for (const c of CASES) {
  describe(c.name, () => {
    for (const optimizer of OPTIMIZERS) {
      test(`${optimizer.name}: native kernels and in-place updates equal stock TF.js over 6 steps`, async () => {
        const from = start(c);
        const stock = await train("cpu", c, from, optimizer, 6);
        const native = await train(NATIVE_BACKEND, c, from, optimizer, 6);
        assert.ok(stock.losses.every(Number.isFinite), `stock losses ${stock.losses.join(", ")}`);
        assert.ok(stock.weights.some((w, i) => w.data.some((v, j) => v !== from.initial[i]!.data[j])), "training moved the weights");
        assertClose(native.losses, stock.losses, 1e-4, "losses");
        native.weights.forEach((w, i) => assertClose(w.data, stock.weights[i]!.data, 1e-4, `weight ${i}`));
      });
    }
  });
}

test("the in-place update copies a variable whose memory another tensor shares", async () => {
  tf.setBackend(NATIVE_BACKEND);
  const { NativeUpdate } = await import("../../sdk/compute/native-update");
  const v = tf.variable(tf.tensor1d([1, 2, 3]));
  const alias = v.clone();
  const rule = new NativeUpdate(tf.backend() as never, [v], { name: "sgd", learningRate: 1 });
  rule.apply(Float32Array.from([1, 1, 1]));
  assert.deepEqual(Array.from(v.dataSync()), [0, 1, 2]);
  assert.deepEqual(Array.from(alias.dataSync()), [1, 2, 3]);
  tf.dispose([v, alias]);
  tf.setBackend("cpu");
});

describe("in-place optimizers against tf.train on random gradients", () => {
  const specs: NativeOptimizerSpec[] = [
    ...OPTIMIZERS,
    { name: "momentum", learningRate: 0.05, momentum: 0.8, useNesterov: false },
    { name: "rmsprop", learningRate: 0.01, decay: 0.8, momentum: 0, centered: true, epsilon: 1e-6 },
    { name: "adam", learningRate: 0.02, beta1: 0.8, beta2: 0.99, epsilon: 1e-4 },
  ];
  for (const spec of specs) {
    test(`${JSON.stringify(spec)}`, async () => {
      const { NativeUpdate } = await import("../../sdk/compute/native-update");
      const { TfjsUpdate } = await import("../../sdk/compute/tfjs-update");
      const init = randomArray(300, 11);
      const grads = Array.from({ length: 8 }, (_, k) => {
        // Gradients away from zero: centered RMSProp takes the root of a difference (as TF.js does).
        const g = randomArray(300, 20 + k, 0.05, 1);
        return g.map((v, i) => (i % 2 ? v : -v));
      });
      const run = (backend: string, make: (v: tf.Variable) => { apply(f: Float32Array): void; dispose(): void }): Float32Array => {
        tf.setBackend(backend);
        const v = tf.variable(tf.tensor2d(Float32Array.from(init), [20, 15]));
        const rule = make(v);
        for (const g of grads) rule.apply(Float32Array.from(g));
        const out = Float32Array.from(v.dataSync());
        rule.dispose();
        v.dispose();
        tf.setBackend("cpu");
        return out;
      };
      const stock = run("cpu", (v) => new TfjsUpdate([v], spec));
      const native = run(NATIVE_BACKEND, (v) => new NativeUpdate(tf.backend() as never, [v], spec));
      assert.ok(stock.every(Number.isFinite));
      assertClose(native, stock, 1e-5, spec.name);
    });
  }
});
