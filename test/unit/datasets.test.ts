import assert from "node:assert/strict";
import { test } from "node:test";
import * as fs from "node:fs";
import * as path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { datasets } from "../../sdk/data/index";
import { DataError } from "../../sdk/errors/errors";

test("mnist gives real 28x28x1 digits in [0, 1] with one-hot labels, split without overlap", () => {
  const train = datasets.mnist();
  const test_ = datasets.mnist({ split: "test" });
  const all = datasets.mnist({ split: "all" });
  assert.equal(train.size + test_.size, all.size);
  assert.ok(all.size >= 9_900 && all.size <= 10_100, `size ${all.size}`);
  assert.deepEqual(train.x.sampleShape, [28, 28, 1]);
  assert.deepEqual(train.y.sampleShape, [10]);
  let min = Infinity;
  let max = -Infinity;
  for (const v of train.x.data) {
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  assert.equal(min, 0);
  assert.ok(max > 0.9 && max <= 1);
  const counts = new Array(10).fill(0) as number[];
  for (let i = 0; i < train.size; i++) {
    const row = Array.from(train.y.data.subarray(i * 10, i * 10 + 10));
    assert.equal(row.reduce((a, b) => a + b, 0), 1);
    counts[row.indexOf(1)]!++;
  }
  assert.ok(counts.every((c) => c > 500), `every digit is present: ${counts.join(",")}`);
  // The first batch mixes classes, so unshuffled training still sees every digit early.
  const firstLabels = new Set<number>();
  for (let i = 0; i < 64; i++) firstLabels.add(Array.from(train.y.data.subarray(i * 10, i * 10 + 10)).indexOf(1));
  assert.ok(firstLabels.size >= 8);
  const trainKeys = new Set<string>();
  for (let i = 0; i < train.size; i++) trainKeys.add(train.x.data.subarray(i * 784, i * 784 + 784).join(","));
  let overlap = 0;
  for (let i = 0; i < test_.size; i++) if (trainKeys.has(test_.x.data.subarray(i * 784, i * 784 + 784).join(","))) overlap++;
  assert.ok(overlap < 5, `test digits also in train: ${overlap}`);
});

test("mnist limit and determinism", () => {
  const a = datasets.mnist({ limit: 100 });
  const b = datasets.mnist({ limit: 100 });
  assert.equal(a.size, 100);
  assert.deepEqual(a.x.data, b.x.data);
});

test("synthetic data is seeded, learnable and shaped as asked", () => {
  const a = datasets.synthetic({ inputShape: [4, 2], classes: 3, size: 50, seed: 9 });
  const b = datasets.synthetic({ inputShape: [4, 2], classes: 3, size: 50, seed: 9 });
  const c = datasets.synthetic({ inputShape: [4, 2], classes: 3, size: 50, seed: 10 });
  assert.deepEqual(a.x.data, b.x.data);
  assert.notDeepEqual(a.x.data, c.x.data);
  assert.deepEqual(a.x.sampleShape, [4, 2]);
  assert.equal(Array.from(a.y.data).reduce((s, v) => s + v, 0), 50);
});

test("fromTensors copies, and gather follows the given order", () => {
  const x = tf.tensor2d([[1, 2], [3, 4], [5, 6]]);
  const y = tf.tensor1d([10, 20, 30], "int32");
  const ds = datasets.fromTensors(x, y);
  assert.equal(ds.size, 3);
  assert.deepEqual(ds.y.sampleShape, []);
  const g = ds.gather(Uint32Array.from([2, 0, 1]), 0, 2);
  assert.deepEqual(Array.from(g.x.data), [5, 6, 1, 2]);
  assert.deepEqual(g.x.shape, [2, 2]);
  assert.ok(g.y.data instanceof Int32Array);
  assert.deepEqual(Array.from(g.y.data), [30, 10]);
  assert.throws(() => datasets.fromTensors(tf.tensor2d([[1], [2]]), tf.tensor1d([1])), (e: unknown) => e instanceof DataError && /2 inputs but 1 targets/.test(e.message));
  assert.throws(() => datasets.fromTensors(tf.tensor1d([1], "bool"), tf.tensor1d([1])), (e: unknown) => e instanceof DataError && /dtype bool/.test(e.message));
});

test("the guides give the MNIST splits' sizes as the datasets have them", () => {
  const train = datasets.mnist({ split: "train" }).size;
  const held = datasets.mnist({ split: "test" }).size;
  const say = (n: number) => n.toLocaleString("en-US");
  const root = path.join(__dirname, "..", "..", "..");
  for (const page of ["README.md", "docs/strategies.md", "notebooks/00-quickstart.ipynb"]) {
    const text = fs.readFileSync(path.join(root, page), "utf8");
    assert.ok(text.includes(say(train)), `${page} gives the training split as ${say(train)} digits`);
    assert.ok(!/8,000[- ](digit|training)|8,000 in/.test(text), `${page} says 8,000 training digits; the split has ${say(train)}`);
  }
  assert.ok(fs.readFileSync(path.join(root, "README.md"), "utf8").includes(`${say(held)} held-out digits`));
});
