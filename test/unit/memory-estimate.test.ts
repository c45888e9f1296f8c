import assert from "node:assert/strict";
import { before, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { estimateMemory } from "../../sdk/plan/estimate-memory";
import { compiledLoss } from "../../sdk/model/model-io";
import { trackBackendMemory } from "../helpers/memory-tracker";
import { deepClassifier, smallConvNet } from "../helpers/models";
import { createOptimizer } from "../../sdk/model/optimizers";
import { convColumnsBytes, RUNTIME_GROWTH_BYTES, shardedMemory } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { OptimizerSpecSchema } from "../../sdk/protocol/optimizer-spec";

/**
 * The memory estimate, checked against what TF.js really holds on its CPU backend: parameters,
 * gradients and optimizer state to the byte, and the activations autograd keeps for the
 * backward pass within 15% (the loss's own few buffers are not in the estimate). The native
 * kernels' convolution column buffer, which the estimate adds, is checked against the native
 * backend in conv-columns.test.ts.
 */

before(async () => {
  await tf.setBackend("cpu");
});

function mnistCnn(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.conv2d({ inputShape: [28, 28, 1], filters: 8, kernelSize: 3, activation: "relu" }),
      tf.layers.maxPooling2d({ poolSize: 2 }),
      tf.layers.conv2d({ filters: 16, kernelSize: 3, activation: "relu" }),
      tf.layers.maxPooling2d({ poolSize: 2 }),
      tf.layers.flatten(),
      tf.layers.dropout({ rate: 0.25 }),
      tf.layers.dense({ units: 64, activation: "relu" }),
      tf.layers.dense({ units: 10, activation: "softmax" }),
    ],
  });
}

/** A recurrent layer over 24 steps of 5 features, then a softmax over 10 classes. */
function recurrent(kind: "lstm" | "gru" | "simpleRNN", units: number, returnSequences = false): () => tf.LayersModel {
  return () =>
    tf.sequential({
      layers: [
        tf.layers[kind]({ units, inputShape: [24, 5], returnSequences }),
        ...(returnSequences ? [tf.layers.flatten()] : []),
        tf.layers.dense({ units: 10, activation: "softmax" }),
      ],
    });
}

const models: Array<[string, () => tf.LayersModel, number[]]> = [
  ["MLP", () => deepClassifier(64, 10, { hidden: 3, width: 128 }), [64]],
  ["LSTM", recurrent("lstm", 12), [24, 5]],
  ["LSTM returning its sequence", recurrent("lstm", 12, true), [24, 5]],
  ["GRU", recurrent("gru", 20), [24, 5]],
  ["SimpleRNN", recurrent("simpleRNN", 12), [24, 5]],
  ["small CNN", () => smallConvNet(3), [8, 8, 1]],
  ["MNIST CNN with dropout", mnistCnn, [28, 28, 1]],
];

for (const [name, make, inputShape] of models) {
  test(`estimateMemory matches TF.js's own memory for the ${name}`, (t) => {
    const tracker = trackBackendMemory();
    try {
      const batch = 32;
      const start = tracker.liveBytes;
      const model = make();
      const params = tracker.liveBytes - start;
      const e = estimateMemory(model, { batchSize: batch, optimizer: "adam" });
      assert.equal(e.paramsBytes, params, "parameters");
      const classes = model.outputs[0]!.shape[1]!;
      const x = tf.randomNormal([batch, ...inputShape]);
      const y = tf.oneHot(tf.zeros([batch], "int32"), classes).toFloat();
      const optimizer = createOptimizer({ name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 });
      const lossFn = compiledLoss(model, "categoricalCrossentropy", optimizer);
      const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
      const atStep = tracker.liveBytes;
      let kept = 0;
      const { value, grads } = tf.engine().gradients(() => {
        const loss = tf.mean(lossFn(y, model.apply(x, { training: true }) as tf.Tensor)) as tf.Scalar;
        kept = tracker.liveBytes - atStep;
        return loss;
      }, vars);
      const gradientBytes = grads.reduce((n, g) => n + g.size * 4, 0);
      assert.equal(e.gradientBytes, gradientBytes, "gradients");
      const outputs = e.activationBytes! - convColumnsBytes(summarizeModel(model), batch);
      const rel = Math.abs(kept - outputs) / kept;
      t.diagnostic(`activations: estimated ${outputs} bytes, TF.js kept ${kept} (${(((outputs - kept) / kept) * 100).toFixed(1)}%)`);
      assert.ok(rel < 0.15, `activations: estimated ${outputs} bytes, TF.js kept ${kept} (${(rel * 100).toFixed(1)}% off)`);
      const beforeUpdate = tracker.liveBytes;
      optimizer.applyGradients(vars.map((v, i) => ({ name: v.name, tensor: grads[i]! })));
      tf.dispose([value, ...grads]);
      // Adam's two slots per parameter (the gradients and the loss were freed meanwhile).
      const state = tracker.liveBytes - beforeUpdate + gradientBytes + 4;
      assert.equal(e.optimizerBytes, state, "optimizer state");
      assert.equal(e.totalBytes, e.paramsBytes + e.gradientBytes + e.optimizerBytes! + e.activationBytes! + RUNTIME_GROWTH_BYTES);
      tf.dispose([x, y]);
      optimizer.dispose();
      model.dispose();
    } finally {
      tracker.stop();
    }
  });
}

test("estimateMemory refuses a bad batch or optimizer, saying which", () => {
  const model = deepClassifier(4, 2);
  assert.throws(() => estimateMemory(model, { batchSize: 0 }), /batchSize 0 must be a positive integer/);
  assert.throws(() => estimateMemory(model, { optimizer: "lbfgs" as never }), /optimizer "lbfgs" is not one meshtrain knows/);
  assert.equal(estimateMemory(model).activationBytes, null);
});

test("sharded estimates: ZeRO-2 keeps no copy of its part where the optimizer updates the weights in place, one where it runs as TF.js's", () => {
  const e = { paramsBytes: 4000, gradientBytes: 4000, optimizerBytes: 8000, activationBytes: 100, runtimeGrowthBytes: 0 };
  const adam = OptimizerSpecSchema.parse({ name: "adam" });
  const adagrad = OptimizerSpecSchema.parse({ name: "adagrad" });
  // 4 replicas, the largest layer 1000 bytes: the gradient's share plus the layer's buffer, a quarter of the state.
  assert.deepEqual(shardedMemory(e, "gradients", 4, 1000, adam), { paramsBytes: 4000, gradientBytes: 2000, optimizerBytes: 2000, activationBytes: 100, runtimeGrowthBytes: 0 });
  assert.deepEqual(shardedMemory(e, "gradients", 4, 1000, adagrad), { paramsBytes: 5000, gradientBytes: 2000, optimizerBytes: 2000, activationBytes: 100, runtimeGrowthBytes: 0 });
  assert.deepEqual(shardedMemory(e, "parameters", 4, 1000, adam), { paramsBytes: 2000, gradientBytes: 2000, optimizerBytes: 2000, activationBytes: 100, runtimeGrowthBytes: 0 });
  assert.deepEqual(shardedMemory(e, "optimizer", 4, 1000, adam), { ...e, optimizerBytes: 2000 });
});
