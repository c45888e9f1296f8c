import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";
import { largestLayerBytes, memoryTotal, estimateReplicaMemory, shardedMemory } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import type { PlanOptions } from "../../sdk/plan/plans";
import { makePlan } from "../../sdk/strategies/make-plan";
import { nativeStepOptions } from "../../sdk/backends/native/step/compile";

/**
 * strategy("auto") weighs ZeRO-2 and ZeRO-3 where no split into stages fits: here four workers
 * and a model of three equal layers, whose one split (two stages, two replicas) keeps two
 * layers' whole training state on a worker, where ZeRO-3 keeps a quarter of it and one layer
 * gathered; three stages do not make whole replicas of four workers, four need four layers.
 */

const adam = { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 };
const devices = (backend = "native") => Array.from({ length: 4 }, () => ({ backend, device: "cpu", memoryBytes: 2 ** 30 }));
const layered = (extra: Partial<Parameters<typeof tf.layers.dense>[0]> = {}): tf.LayersModel =>
  tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [256], units: 256, activation: "relu", ...extra }),
      tf.layers.dense({ units: 256, activation: "relu" }),
      tf.layers.dense({ units: 256, activation: "softmax" }),
    ],
  });

function need(model: tf.LayersModel, shard: "optimizer" | "gradients" | "parameters"): number {
  const s = summarizeModel(model);
  return memoryTotal(shardedMemory(estimateReplicaMemory(s, { batchSize: 4, optimizer: adam, native: nativeStepOptions(model).nativeMemory }), shard, 4, largestLayerBytes(s), adam));
}

function planAt(cap: number, model: tf.LayersModel, o: Partial<PlanOptions> = {}) {
  return makePlan(cluster().workers(4).strategy("auto").memory(cap).spec(), summarizeModel(model), { batchSize: 16, optimizer: adam, devices: devices(), ...nativeStepOptions(model), ...o });
}

test("auto: where no split into stages fits and ZeRO-1 does not, ZeRO-2 where it fits, else ZeRO-3, saying what each needs", () => {
  const model = layered();
  const [one, two, three] = [need(model, "optimizer"), need(model, "gradients"), need(model, "parameters")];
  assert.ok(three < two && two < one, `ZeRO-3 ${three} < ZeRO-2 ${two} < ZeRO-1 ${one}`);
  const zero2 = planAt(Math.floor((one + two) / 2), model);
  assert.equal(zero2.strategy === "data" ? zero2.shard : zero2.strategy, "gradients");
  const why2 = zero2.explain();
  assert.match(why2, /would need .*, above/);
  assert.match(why2, /2 stages: .*\n.*3 stages: skipped, 4 workers do not form whole replicas of 3 stages/);
  // Its default bucket (25 MiB) would hold the three layers' gradient whole, more than ZeRO-1 needs: auto takes a layer at a time.
  assert.match(why2, /ZeRO-2 would need [\d.]+ MiB a layer at a time \(\S+ MiB in its default buckets\)/);
  assert.match(why2, /ZeRO-2 \(shard: "gradients"\) fits with each layer a bucket of its own \(bucketMB 0; its default buckets would need .*\): each worker keeps the whole weights and 1\/4 of the gradient and the optimizer's state.*\n.*no split into stages fits: auto chose ZeRO-2/);
  assert.equal(zero2.strategy === "data" ? zero2.buckets?.count : null, 3);
  const zero3 = planAt(Math.floor((two + three) / 2), model);
  assert.equal(zero3.strategy === "data" ? zero3.shard : zero3.strategy, "parameters");
  // Its default bucket (12 MiB) would hold the three layers twice: auto takes a layer at a time, as for ZeRO-2.
  assert.match(zero3.explain(), /ZeRO-3 [\d.]+ MiB a layer at a time \(\S+ MiB in its default buckets\)/);
  assert.match(zero3.explain(), /ZeRO-2 would need .*\n.*ZeRO-3 \(shard: "parameters"\) fits with each layer a bucket of its own \(bucketMB 0; its default buckets would need .*\): each worker keeps 1\/4 of everything and gathers one layer at a time.*\n.*no split into stages fits: auto chose ZeRO-3/);
  assert.equal(zero3.strategy === "data" ? zero3.buckets?.count : null, 3);
  // Tighter than ZeRO-3's need: refused, every option's need said.
  assert.throws(() => planAt(three - 1024, model), (e: unknown) => e instanceof ConfigError && /ZeRO-2 would need .* and ZeRO-3 .* per worker, above/.test(e.message));
});

test("auto: ZeRO-2 and -3 only for what meshtrain's native step computes, on native workers; otherwise refused, saying which part does not", () => {
  const cap = Math.floor((need(layered(), "gradients") + need(layered(), "parameters")) / 2);
  const refused = (o: Partial<PlanOptions>, model: tf.LayersModel, why: RegExp) =>
    assert.throws(() => planAt(cap, model, o), (e: unknown) => e instanceof ConfigError && why.test(e.message), `expected ${why}`);
  refused({}, layered({ activation: "logSoftmax" as "softmax" }), /ZeRO-2 and -3 .*: they work inside meshtrain's native step, and \w+ \(Dense\) uses the logSoftmax activation/);
  refused({ devices: devices("webgpu") }, layered(), /worker 0 runs TF\.js's "webgpu" backend/);
  // Not compiled (a plan made without the model's layers checked): not weighed, saying so.
  refused({ nativeLayers: undefined }, layered(), /not weighed: this plan was made without compiling the model's layers/);
  // The same plan with any loss is ZeRO-3 (the native step computes every loss model.compile names).
  const ok = planAt(cap, layered(), { loss: "hinge" });
  assert.equal(ok.strategy === "data" ? ok.shard : ok.strategy, "parameters");
});

test("auto: where a split into stages and ZeRO-2 both fit, the one predicted faster; without measured speeds, the stages, saying why", () => {
  // Four equal layers: two stages hold half the model's whole state each (8 bytes a parameter
  // with Adam), ZeRO-2 4 + 12/4 = 7, ZeRO-1 10: a cap between ZeRO-1's and the stages' need.
  const four = tf.sequential({ layers: [256, 256, 256, 256].map((units, i) => tf.layers.dense({ units, activation: "relu", ...(i === 0 ? { inputShape: [256] } : {}) })) });
  const cap = Math.floor(need(four, "optimizer") * 0.92);
  const measured = (linkBytesPerSecond: number, linkLatencyMs: number) => devices().map((d) => ({ ...d, gflops: 20, kernelOverheadUs: 10, linkBytesPerSecond, linkLatencyMs }));
  const shardOf = (p: ReturnType<typeof planAt>) => (p.strategy === "data" ? p.shard : "stages" in p ? `${p.strategy} ${p.replicas}x${p.stages}` : p.strategy);
  const fast = planAt(cap, four, { devices: measured(5e9, 0.001) });
  assert.equal(shardOf(fast), "gradients", fast.explain());
  assert.match(fast.explain(), /2 stages fit: .*\n(.*\n)*.*ranked by predicted speed .*: ZeRO-2 \(shard: "gradients"\) (\d+) samples\/s, a hybrid of 2 replicas x 2 stages (\d+) samples\/s; auto chose ZeRO-2 \(shard: "gradients"\), the faster/);
  const [, zeroSpeed, stagedSpeed] = /ZeRO-2 \(shard: "gradients"\) (\d+) samples\/s, a hybrid of 2 replicas x 2 stages (\d+)/.exec(fast.explain())!;
  assert.ok(Number(zeroSpeed) > Number(stagedSpeed));
  // Both predicted from FLOPs (no profile here): the ranking says so, and how to time them.
  assert.match(fast.explain(), /the faster; these predictions come from the model's FLOPs, not timed: `await cluster\.profile\(model, \{ batchSize \}\)` times the layers and the data ring first/);
  // No one worker holds the whole model under this cap: no "slower than one worker" to compare with.
  assert.equal(fast.prediction?.oneWorker, undefined);
  assert.doesNotMatch(fast.explain(), /SLOWER than one worker/);
  const uncapped = makePlan(cluster().workers(4).strategy("data", { shard: "gradients" }).spec(), summarizeModel(four), { batchSize: 16, optimizer: adam, devices: measured(5e9, 0.001) });
  assert.ok(uncapped.prediction && "oneWorker" in uncapped.prediction && uncapped.prediction.oneWorker);
  // On slow links ZeRO-2's collectives, two a layer over the whole ring, cost more than the
  // hybrid's one all-reduce of half the gradient between each stage's two replicas.
  const slow = planAt(cap, four, { devices: measured(1e7, 0.1) });
  assert.equal(shardOf(slow), "hybrid 2x2", slow.explain());
  assert.match(slow.explain(), /ranked by predicted speed .*; auto chose a hybrid of 2 replicas x 2 stages, the faster/);
  const [, zeroSlow, stagedSlow] = /ZeRO-2 \(shard: "gradients"\) (\d+) samples\/s, a hybrid of 2 replicas x 2 stages (\d+)/.exec(slow.explain())!;
  assert.ok(Number(stagedSlow) > Number(zeroSlow) && Math.round(slow.prediction!.samplesPerSecond) === Number(stagedSlow));
  // No measured speeds (devices without them): no prediction to rank by, so the stages, saying so.
  const unmeasured = planAt(cap, four);
  assert.equal(shardOf(unmeasured), "hybrid 2x2");
  assert.match(unmeasured.explain(), /ZeRO-2 \(shard: "gradients"\) fits too, but auto ranks it against the stages by predicted speed, and neither can be predicted without the workers' measured speeds .*: auto chose a hybrid of 2 replicas x 2 stages/);
});
