import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { profileBudgetMs, withoutNames } from "../../sdk/driver/model-profiles";

const keyOf = (m: tf.LayersModel): string => JSON.stringify(withoutNames(m.toJSON(null, false) as unknown as Record<string, unknown>));

function branchy(units: number, name?: string): tf.LayersModel {
  const input = tf.input({ shape: [6] });
  const a = tf.layers.dense({ units, activation: "relu" }).apply(input) as tf.SymbolicTensor;
  const b = tf.layers.dense({ units, activation: "tanh" }).apply(input) as tf.SymbolicTensor;
  const sum = tf.layers.add().apply([a, b]) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: 3, activation: "softmax" }).apply(sum) as tf.SymbolicTensor;
  return tf.model({ inputs: input, outputs: out, ...(name ? { name } : {}) });
}

test("a model built again (TF.js names its layers anew) has the kept profile's key; another architecture or wiring does not", () => {
  const first = branchy(8);
  const again = branchy(8, "mine");
  assert.notEqual(first.layers[1]!.name, again.layers[1]!.name, "TF.js gave the second model's layers other names");
  assert.equal(keyOf(again), keyOf(first));
  assert.notEqual(keyOf(branchy(9)), keyOf(first), "other units");
  // The same layers wired otherwise: the output reads the first branch only.
  const input = tf.input({ shape: [6] });
  const a = tf.layers.dense({ units: 8, activation: "relu" }).apply(input) as tf.SymbolicTensor;
  const b = tf.layers.dense({ units: 8, activation: "tanh" }).apply(input) as tf.SymbolicTensor;
  const sum = tf.layers.add().apply([a, a]) as tf.SymbolicTensor;
  const out = tf.layers.dense({ units: 3, activation: "softmax" }).apply(sum) as tf.SymbolicTensor;
  const rewired = tf.model({ inputs: input, outputs: [out, b] });
  assert.notEqual(keyOf(rewired), keyOf(first), "another wiring");
  // Names stay out of the key, the rest of the config in it.
  assert.doesNotMatch(keyOf(first), new RegExp(first.layers[1]!.name));
  assert.match(keyOf(first), /"activation":"tanh"/);
});

test("a fit's profile budget: a second, or a tenth of an epoch if more, never more than the whole fit; a second with no prediction", () => {
  const plan = (stepMs: number | undefined) => ({ prediction: stepMs === undefined ? null : { stepMs } });
  // 100 steps an epoch.
  assert.equal(profileBudgetMs(plan(20), 6400, 64, 3), 1000, "a 6 s fit: a second");
  assert.equal(profileBudgetMs(plan(200), 6400, 64, 3), 2000, "a 60 s fit: a tenth of its 20 s epoch");
  assert.equal(profileBudgetMs(plan(2), 6400, 64, 2), 400, "a 0.4 s fit: no more than the fit");
  assert.equal(profileBudgetMs(plan(undefined), 6400, 64, 1), 1000);
  assert.equal(profileBudgetMs(plan(0), 6400, 64, 1), 1000);
});
