import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { branchOf } from "../../sdk/model/chain";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { asSequential } from "../../sdk/driver/chain-model";
import { batchNormClassifier, functionalChain, residualClassifier } from "../helpers/stateful-models";

test("Sequential models and functional chains are chains; their summaries number the same layers", () => {
  assert.equal(branchOf(batchNormClassifier()), null);
  assert.equal(branchOf(functionalChain()), null);
  const a = summarizeModel(batchNormClassifier());
  const b = summarizeModel(functionalChain());
  assert.deepEqual(b.layers.map((l) => l.className), a.layers.map((l) => l.className));
  assert.deepEqual(b.variables.map((v) => [v.layer, v.shape]), a.variables.map((v) => [v.layer, v.shape]));
  assert.deepEqual(b.state.map((v) => [v.layer, v.shape]), a.state.map((v) => [v.layer, v.shape]));
  assert.deepEqual(a.state.map((v) => v.layer), [1, 1, 4, 4], "the moving mean and variance of both normalizations");
});

test("a branch, a merge and a shared layer are named", () => {
  assert.match(branchOf(residualClassifier()) ?? "", /feeds 2 layers \(residual_dense, residual_add\): a branch/);
  const a = tf.input({ shape: [3] });
  const b = tf.input({ shape: [3] });
  const merged = tf.layers.concatenate({ name: "joined" }).apply([a, b]) as tf.SymbolicTensor;
  assert.match(branchOf(tf.model({ inputs: [a, b], outputs: merged })) ?? "", /2 inputs and 1 outputs/);
  const x = tf.input({ shape: [3] });
  const shared = tf.layers.dense({ units: 3, name: "twice" });
  const y = shared.apply(shared.apply(x)) as tf.SymbolicTensor;
  assert.match(branchOf(tf.model({ inputs: x, outputs: y })) ?? "", /"twice" \(Dense\) is called 2 times/);
});

test("asSequential rebuilds a functional chain with its weights, and leaves other models as they are", async () => {
  const f = functionalChain();
  const s = await asSequential(f);
  assert.equal(s.getClassName(), "Sequential");
  assert.notEqual(s, f);
  const x = tf.randomUniform([5, 6], -1, 1, "float32", 3);
  const want = (f.predict(x) as tf.Tensor).dataSync();
  const got = (s.predict(x) as tf.Tensor).dataSync();
  want.forEach((v, i) => assert.ok(Math.abs(v - got[i]!) < 1e-6));
  const r = residualClassifier();
  assert.equal(await asSequential(r), r);
  const q = batchNormClassifier();
  assert.equal(await asSequential(q), q);
});
