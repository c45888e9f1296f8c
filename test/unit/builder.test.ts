import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";
import { resolveFitOptions } from "../../sdk/driver/fit-options";

const configError = (pattern: RegExp) => (e: unknown) => e instanceof ConfigError && pattern.test(e.message);

function mlp(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ units: 4, inputShape: [3] }), tf.layers.dense({ units: 2 })] });
}

test("every builder method returns a new builder and leaves the old one as it was", () => {
  const a = cluster();
  const b = a.workers(3);
  const c = b.strategy("data").backend("cpu");
  assert.notEqual(a, b);
  assert.notEqual(b, c);
  assert.match(String(a), /no workers yet/);
  assert.match(String(b), /3 local cpu worker/);
  assert.match(String(b), /backend "auto"/);
  assert.match(String(c), /backend "cpu"/);
  assert.ok(Object.isFrozen(c));
});

test("the spec is frozen all the way down and has the documented defaults", () => {
  const spec = cluster().workers(2).spec();
  assert.ok(Object.isFrozen(spec) && Object.isFrozen(spec.workers) && Object.isFrozen(spec.heartbeat));
  assert.deepEqual(spec.heartbeat, { intervalMs: 1000, timeoutMs: 10000, idleTimeoutMs: 600000 });
  assert.equal(spec.backend, "auto");
  assert.deepEqual(spec.strategy, { name: "data", options: { feed: "driver", overlap: "auto", batchNorm: "replica" } });
  assert.throws(() => {
    (spec.heartbeat as { intervalMs: number }).intervalMs = 5;
  }, TypeError);
});

test("bad arguments fail at once, naming the field", () => {
  assert.throws(() => cluster().workers(0), configError(/workers\(n\).*>=1|workers\(n\).*too small/i));
  assert.throws(() => cluster().workers(2.5), configError(/workers\(n\)/));
  assert.throws(() => cluster().backend("tpu" as never), configError(/backend\(name\)/));
  assert.throws(() => cluster().strategy("sharding" as "data"), configError(/offers: "data", "ps", "model", "pipeline", "hybrid", "auto"/));
  assert.throws(() => cluster().connect(["http://x:1"]), configError(/ws:\/\/host:port/));
  assert.throws(() => cluster().token("short"), configError(/at least 16/));
});

test("combinations that cannot work say the arithmetic", () => {
  assert.throws(() => cluster().spec(), configError(/no workers.*\n.*workers\(n\)/s));
  assert.throws(
    () => cluster().workers(2).heartbeat({ intervalMs: 1000, timeoutMs: 1500 }).spec(),
    configError(/timeoutMs 1500 must be at least 2 x intervalMs \(2 x 1000 = 2000\)/),
  );
  assert.throws(() => cluster().connect(["ws://10.0.0.2:7070"]).spec(), configError(/needs the cluster token/));
  assert.throws(
    () => cluster().connect(["ws://a:1", "ws://a:1/"]).token("x".repeat(16)).spec(),
    configError(/lists ws:\/\/a:1 twice/),
  );
  assert.throws(
    () => cluster().workers(3).plan(mlp(), { batchSize: 100 }),
    configError(/batchSize 100 is not divisible by 3 replicas \(100 % 3 = 1\)\nhelp: use a multiple of 3, e\.g\. 99 \(33 per replica\) or 102 \(34 per replica\)/),
  );
});

test("plan() is pure data: ranks, ring order and shard sizes", () => {
  const plan = cluster().workers(3).strategy("data").plan(mlp(), { batchSize: 96 });
  assert.equal(plan.strategy, "data");
  assert.deepEqual(plan.ring, [0, 1, 2]);
  assert.deepEqual({ ...plan.batch, splits: undefined }, { globalBatch: 96, perReplica: [32, 32, 32], splits: undefined });
  assert.deepEqual(plan.batch?.splits.map((x) => x.perReplica), [[32, 32, 32]]);
  assert.deepEqual(plan.workers.map((w) => w.rank), [0, 1, 2]);
  assert.equal(plan.model.trainableParamCount, 3 * 4 + 4 + 4 * 2 + 2);
  assert.equal(plan.gradientBytes, 26 * 4);
  assert.equal(plan.allReduce.bytesSentPerRank, Math.round((2 * 2 * 26 * 4) / 3));
  assert.deepEqual(JSON.parse(JSON.stringify(plan)).ring, [0, 1, 2]);
  assert.match(String(plan), /ring 0 -> 1 -> 2 -> 0/);
  assert.match(String(plan), /global batch 96 = 3 x 32 per replica/);
});

test("fit options take defaults and refuse nonsense", () => {
  const o = resolveFitOptions({ optimizer: "adam" });
  assert.deepEqual(o.optimizer, { name: "adam", learningRate: 0.001, beta1: 0.9, beta2: 0.999 });
  assert.equal(o.epochs, 1);
  assert.equal(o.batchSize, 32);
  assert.equal(o.shuffle, true);
  assert.equal(typeof o.seed, "number");
  assert.equal(resolveFitOptions({ seed: 3 }).seed, 3);
  assert.throws(() => resolveFitOptions({ epochs: 0 }), configError(/epochs/));
  assert.throws(() => resolveFitOptions({ optimizer: "lamb" as never }), configError(/optimizer/));
  assert.throws(() => resolveFitOptions({ optimizer: { name: "sgd", learningRate: -1 } }), configError(/learningRate/));
  assert.throws(() => resolveFitOptions({ loss: "mse" as never }), configError(/loss/));
  assert.throws(() => resolveFitOptions({ onStep: 5 as never }), configError(/onStep: must be a function/));
});

test("strategy options are checked: feed is driver or workers", () => {
  assert.deepEqual(cluster().workers(2).strategy("data", { feed: "workers" }).spec().strategy, { name: "data", options: { feed: "workers", overlap: "auto", batchNorm: "replica" } });
  assert.throws(() => cluster().strategy("data", { feed: "carrier-pigeon" as never }), configError(/feed/));
  assert.throws(() => cluster().strategy("data", { stages: 2 } as never), configError(/stages/));
});
