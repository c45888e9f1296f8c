import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { bucketCapBytes, largestBucketBytes, shardBuckets } from "../../sdk/plan/shard-buckets";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";
import { memoryTotal } from "../../sdk/plan/memory";

test("layers fill buckets from the output back, each within the cap; a layer above it is a bucket of its own", () => {
  const pick = (sizes: number[], cap: number) => shardBuckets(sizes, cap).map((b) => [b.first, b.last, b.bytes]);
  assert.deepEqual(pick([224, 288, 288, 288, 108], 600), [[0, 0, 224], [1, 2, 576], [3, 4, 396]]);
  // Cap 0: each layer alone.
  assert.deepEqual(pick([4, 8, 12], 0), [[0, 0, 4], [1, 1, 8], [2, 2, 12]]);
  // The 11.4M MLP at the default 25 MiB: its 36 MB layer is alone, the 120 kB output layer is not joined to it.
  assert.deepEqual(pick([9_420_000, 36_012_000, 120_040], 25 * 2 ** 20), [[0, 0, 9_420_000], [1, 1, 36_012_000], [2, 2, 120_040]]);
  assert.deepEqual(pick([1, 1, 1, 1], 1e9), [[0, 3, 4]]);
  assert.deepEqual(pick([], 10), []);
});

test("the stages' default caps: ZeRO-2 25 MiB (as DDP's buckets), ZeRO-3 12 MiB (it holds a bucket twice); bucketMB overrides", () => {
  assert.equal(bucketCapBytes("gradients"), 25 * 2 ** 20);
  assert.equal(bucketCapBytes("parameters"), 12 * 2 ** 20);
  assert.equal(bucketCapBytes("parameters", 1), 2 ** 20);
  assert.equal(bucketCapBytes("gradients", 0), 0);
  const model = tf.sequential({ layers: [tf.layers.dense({ inputShape: [100], units: 100 }), tf.layers.dense({ units: 10 })] });
  // 40400 and 4040 bytes: one bucket under the default, the larger layer alone at 0.
  assert.equal(largestBucketBytes(summarizeModel(model), bucketCapBytes("gradients")), 44440);
  assert.equal(largestBucketBytes(summarizeModel(model), 0), 40400);
  model.dispose();
});

test("bucketMB without shard gradients or parameters is refused, saying why", () => {
  for (const shard of [undefined, "optimizer"] as const) {
    assert.throws(() => cluster().workers(2).strategy("data", { ...(shard ? { shard } : {}), bucketMB: 4 }).spec(), (e: unknown) => e instanceof ConfigError && /bucketMB 4 groups the layers of shard "gradients" or "parameters"/.test(e.message));
  }
});

test("ZeRO-2 and -3 without bucketMB take one layer a bucket where only that fits a worker's memory cap, and the plan says why; bucketMB given is kept", () => {
  // Eight layers of 257 KiB with Adam on 4 workers: ZeRO-3 holds its largest bucket twice, all eight (2 MiB) in the default 12 MiB one.
  const model = tf.sequential({ layers: Array.from({ length: 8 }, (_, i) => tf.layers.dense({ units: 256, ...(i === 0 ? { inputShape: [256] } : {}) })) });
  const plan = (memory: string | null, o: { shard: "gradients" | "parameters"; bucketMB?: number }) => {
    const b = cluster().workers(4).strategy("data", o);
    const p = (memory ? b.memory(memory) : b).plan(model, { batchSize: 16, optimizer: "adam" });
    assert.ok(p.strategy === "data");
    return p;
  };
  const free = plan(null, { shard: "parameters" });
  assert.deepEqual(free.buckets, { capBytes: 12 * 2 ** 20, count: 1, largestBytes: 8 * 257 * 1024 });
  const single = plan(null, { shard: "parameters", bucketMB: 0 });
  // A cap between the two needs: the default buckets do not fit, one layer a bucket does.
  const cap = (memoryTotal(free.memory) + memoryTotal(single.memory)) / 2;
  const capped = plan(`${Math.round(cap)}B`, { shard: "parameters" });
  assert.equal(capped.buckets?.capBytes, 0);
  assert.deepEqual(capped.memory, single.memory);
  assert.match(capped.toString(), /each of its 8 layer\(s\) a bucket of its own \(bucketMB 0: its default buckets would need [\d.]+ MiB per worker, above the [\d.]+ MiB a worker may use\)/);
  // Given, it is kept (the workers then refuse what does not fit, saying so); ZeRO-2 falls back alike.
  assert.equal(plan(`${Math.round(cap)}B`, { shard: "parameters", bucketMB: 12 }).buckets?.capBytes, 12 * 2 ** 20);
  const two = plan(null, { shard: "gradients" });
  const twoSingle = plan(null, { shard: "gradients", bucketMB: 0 });
  assert.equal(plan(`${Math.round((memoryTotal(two.memory) + memoryTotal(twoSingle.memory)) / 2)}B`, { shard: "gradients" }).buckets?.capBytes, 0);
  model.dispose();
});
