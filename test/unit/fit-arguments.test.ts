import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { ConfigError, DataError, ModelError } from "../../sdk/index";
import { checkFitArguments } from "../../sdk/driver/fit-arguments";
import { describeGiven } from "../../sdk/util/describe-value";
import { smallClassifier } from "../helpers/models";

test("fit(model, x, y) as model.fit is called says what fit takes, naming the tensor, not its properties", () => {
  const model = smallClassifier();
  const x = tf.zeros([6, 4]);
  const y = tf.zeros([6, 3]);
  assert.throws(
    () => checkFitArguments(model, x, y),
    (e: unknown) =>
      e instanceof DataError &&
      /fit's second argument is a tf\.Tensor of shape \[6,4\] \(float32\): fit takes \(model, dataset, options\)/.test(e.message) &&
      /datasets\.fromTensors\(x, y\)/.test(e.hint ?? ""),
  );
  x.dispose();
  y.dispose();
});

test("options that are not an object, and a first argument that is not a model, are named", () => {
  const model = smallClassifier();
  const t = tf.zeros([2, 2]);
  assert.throws(() => checkFitArguments(model, {}, t), (e: unknown) => e instanceof ConfigError && /its options, is a tf\.Tensor of shape \[2,2\]/.test(e.message));
  assert.throws(() => checkFitArguments(model, {}, [1, 2]), (e: unknown) => e instanceof ConfigError && /is an array of 2 items/.test(e.message));
  assert.throws(() => checkFitArguments({ layers: 1 }, {}, {}), (e: unknown) => e instanceof ModelError && /first argument is an object with keys layers, not a tf\.LayersModel/.test(e.message));
  assert.doesNotThrow(() => checkFitArguments(model, {}, undefined));
  assert.doesNotThrow(() => checkFitArguments(model, {}, { epochs: 1 }));
  t.dispose();
});

test("describeGiven names a value by its kind", () => {
  assert.equal(describeGiven(null), "null");
  assert.equal(describeGiven(3), "a number");
  assert.equal(describeGiven(new Map()), "a Map");
  assert.match(describeGiven(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i]))), /k7, \.\.\. \(10 in all\)$/);
});
