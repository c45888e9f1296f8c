import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { RUNTIME_GROWTH_BYTES as RUNTIME } from "../../sdk/plan/memory";
import { stageNeedBytes } from "../../sdk/plan/partition";
import { makePlan } from "../../sdk/strategies/make-plan";
import { theoreticalBubble } from "../../sdk/plan/schedules";
import { deepClassifier } from "../helpers/models";

const configError = (pattern: RegExp) => (e: unknown) => e instanceof ConfigError && pattern.test(e.message);

/** Layers of very different cost, so that the split is not simply even. */
function uneven(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ units: 256, inputShape: [64] }),
      tf.layers.dense({ units: 16 }),
      tf.layers.dense({ units: 16 }),
      tf.layers.dense({ units: 16 }),
      tf.layers.dense({ units: 256 }),
      tf.layers.dense({ units: 10 }),
    ],
  });
}

const devices = (n: number, memoryBytes: number) =>
  Array.from({ length: n }, () => ({ backend: "native", device: "cpu", memoryBytes, gflops: 20, kernelOverheadUs: 10, linkBytesPerSecond: 5e8, linkLatencyMs: 0.1 }));

test("strategies and their options are checked against the number of workers, with the arithmetic", () => {
  assert.throws(() => cluster().workers(4).strategy("hybrid", { stages: 3 }).spec(), configError(/replicas\(1\) x stages\(3\) = 3 != workers\(4\)/));
  assert.throws(() => cluster().workers(4).strategy("hybrid", { stages: 2, replicas: 3 }).spec(), configError(/replicas\(3\) x stages\(2\) = 6 != workers\(4\)/));
  assert.throws(() => cluster().workers(3).strategy("pipeline", { stages: 2 }).spec(), configError(/stages\(2\) != workers\(3\)/));
  assert.throws(() => cluster().workers(1).strategy("model").spec(), configError(/at least 2 workers/));
  assert.throws(() => cluster().workers(2).strategy("pipeline", { schedule: "zigzag" as never }), configError(/schedule/));
  assert.throws(() => cluster().workers(2).strategy("pipeline", { microBatches: 0 }), configError(/microBatches/));
  assert.deepEqual(cluster().workers(4).strategy("hybrid", { stages: 2 }).spec().strategy, { name: "hybrid", options: { stages: 2, microBatches: 4, schedule: "1f1b" } });
  assert.equal(cluster().workers(2).memory("256MB").spec().memoryCapBytes, 256e6);
  assert.equal(cluster().workers(2).memory("1.5GiB").spec().memoryCapBytes, 1.5 * 2 ** 30);
  assert.throws(() => cluster().memory("lots"), configError(/not a size/));
  assert.throws(() => cluster().memory("10KB"), configError(/at least 1 MiB/));
});

test("a pipeline plan splits layers into contiguous stages, balancing FLOPs, and prints its schedule", () => {
  const model = uneven();
  const plan = cluster().workers(3).strategy("pipeline", { microBatches: 4, schedule: "gpipe" }).plan(model, { batchSize: 32 });
  if (plan.strategy !== "pipeline") throw new Error("pipeline plan expected");
  // Layer 0 alone costs more than all the others together: it gets a stage to itself.
  assert.deepEqual(plan.stagePlans[0]!.from, 0);
  assert.deepEqual(plan.stagePlans[0]!.to, 1);
  assert.equal(Math.max(...plan.stagePlans.map((s) => s.flopsPerSample)), summarizeModel(model).layers[0]!.flopsPerSample);
  assert.deepEqual(plan.ranks, [[0, 1, 2]]);
  assert.equal(plan.batch?.microBatch, 8);
  assert.deepEqual(plan.stagePlans.map((s) => s.inFlight), [4, 4, 4]);
  assert.deepEqual(plan.stagePlans[1]!.inputShape, [256]);
  assert.deepEqual(plan.stagePlans[2]!.outputShape, [10]);
  const text = String(plan);
  assert.match(text, /pipeline plan: 1 replica\(s\) x 3 stage\(s\) on 3 worker\(s\), 4 micro-batch\(es\), schedule gpipe/);
  assert.match(text, /stage 0 \| F0 F1 F2 F3/);
  // Plain data underneath: it survives JSON.
  const json = JSON.parse(JSON.stringify(plan)) as { stagePlans: unknown[]; schedule: { actions: unknown[][] } };
  assert.equal(json.stagePlans.length, 3);
  assert.equal(json.schedule.actions[0]!.length, 8);
  assert.match(plan.explain(), /split 6 layers into 3 contiguous stages minimising the slowest stage/);
});

test("1F1B plans hold fewer activations than GPipe on the first stages", () => {
  const model = deepClassifier(32, 4, { hidden: 6, width: 64 });
  const b = cluster().workers(4).strategy("pipeline", { microBatches: 8, schedule: "gpipe" });
  const g = b.plan(model, { batchSize: 64 });
  const o = cluster().workers(4).strategy("pipeline", { microBatches: 8, schedule: "1f1b" }).plan(model, { batchSize: 64 });
  if (g.strategy === "data" || o.strategy === "data" || g.strategy === "ps" || o.strategy === "ps") throw new Error("pipeline plans expected");
  assert.deepEqual(o.stagePlans.map((s) => s.inFlight), [4, 3, 2, 1]);
  assert.ok(o.stagePlans[0]!.activationBytes < g.stagePlans[0]!.activationBytes);
});

test("model and hybrid plans: one micro-batch; R replicas x S stages with rank = r * S + s", () => {
  const model = deepClassifier(8, 3, { hidden: 4 });
  const m = cluster().workers(2).strategy("model").plan(model, { batchSize: 16 });
  if (m.strategy === "data" || m.strategy === "ps") throw new Error("model plan expected");
  assert.equal(m.microBatches, 1);
  assert.equal(m.batch?.microBatch, 16);
  const h = cluster().workers(6).strategy("hybrid", { stages: 3 }).plan(model, { batchSize: 24 });
  if (h.strategy === "data" || h.strategy === "ps") throw new Error("hybrid plan expected");
  assert.deepEqual(h.ranks, [[0, 1, 2], [3, 4, 5]]);
  assert.deepEqual({ ...h.batch, splits: undefined }, { globalBatch: 24, perReplica: [12, 12], microBatch: 3, splits: undefined });
  assert.deepEqual(h.batch?.splits.map((x) => x.micro), [[[3, 3, 3, 3], [3, 3, 3, 3]]]);
  assert.throws(() => cluster().workers(6).strategy("hybrid", { stages: 3 }).plan(model, { batchSize: 25 }), configError(/25 is not divisible by 2 replicas/));
  assert.throws(() => cluster().workers(2).strategy("pipeline", { microBatches: 8 }).plan(model, { batchSize: 4 }), configError(/batch of 4 cannot be cut into 8 micro-batches/));
});

test("place() pins layers to a worker's stage; the rest are split around them; bad placements are refused", () => {
  const model = deepClassifier(8, 3, { hidden: 5 });
  const plan = cluster().workers(3).strategy("pipeline").plan(model, { batchSize: 12 });
  const placed = plan.place([0, 4], 0);
  if (placed.strategy === "data" || placed.strategy === "ps") throw new Error("pipeline plan expected");
  assert.deepEqual(placed.stagePlans.map((s) => [s.from, s.to]), [[0, 4], [4, 5], [5, 6]]);
  assert.deepEqual(placed.placed, [[0, [0, 4]]]);
  const both = placed.place([4, 5], 1);
  if (both.strategy === "data" || both.strategy === "ps") throw new Error("pipeline plan expected");
  assert.deepEqual(both.stagePlans.map((s) => [s.from, s.to]), [[0, 4], [4, 5], [5, 6]]);
  assert.match(both.explain(), /placed by hand: stage 0 = layers \[0, 4\), stage 1 = layers \[4, 5\)/);
  assert.throws(() => plan.place([2, 4], 0), configError(/stage 0 would start at layer 2/));
  assert.throws(() => plan.place([0, 6], 0), configError(/leaving 0 layer\(s\) for 2 later stage\(s\)/));
  assert.throws(() => plan.place([0, 2], 7), configError(/rank 7 is not one of this plan's workers/));
  assert.throws(() => plan.place([3, 2], 1), configError(/0 <= from < to <= 6/));
  assert.throws(() => placed.place([0, 2], 1), configError(/stage 1 would start at layer 0/));
  const data = cluster().workers(2).plan(model);
  assert.throws(() => data.place([0, 2], 0), configError(/every worker holds all layers/));
});

test("memory caps decide whether a stage fits, and the refusal says how much was needed", () => {
  const model = deepClassifier(256, 10, { hidden: 4, width: 256 });
  const need = summarizeModel(model).paramCount * 4 * 2;
  const spec = cluster().workers(2).strategy("pipeline").memory(RUNTIME + Math.max(2 ** 20, Math.ceil(need * 0.4))).spec();
  assert.throws(() => makePlan(spec, summarizeModel(model), { batchSize: 32 }), configError(/cannot split .* into 2 stages: no split of 5 layers into 2 stages fits the memory/));
  const roomy = cluster().workers(2).strategy("pipeline").memory(RUNTIME + Math.ceil(need * 0.8)).spec();
  const plan = makePlan(roomy, summarizeModel(model), { batchSize: 32 });
  if (plan.strategy === "data" || plan.strategy === "ps") throw new Error("pipeline plan expected");
  for (const s of plan.stagePlans) assert.ok(stageNeedBytes(s) <= RUNTIME + need * 0.8);
});

test("auto picks data parallelism when the model fits, else the fewest stages that fit, and says why", () => {
  const model = deepClassifier(256, 10, { hidden: 4, width: 512 });
  const whole = summarizeModel(model).paramCount * 4 * 2;
  const fits = cluster().workers(4).strategy("auto").plan(model, { batchSize: 32 });
  assert.equal(fits.strategy, "data");
  assert.match(fits.explain(), /auto chose data parallelism: the whole model needs .* per replica .* no worker reported a memory limit/);
  const spec = cluster().workers(4).strategy("auto").memory(RUNTIME + Math.ceil(whole * 0.7)).spec();
  const split = makePlan(spec, summarizeModel(model), { batchSize: 32, devices: devices(4, 2 ** 30) });
  if (split.strategy !== "hybrid") throw new Error(`hybrid plan expected, got ${split.strategy}`);
  assert.equal(split.stages, 2);
  assert.equal(split.replicas, 2);
  const why = split.explain();
  assert.match(why, /but worker 0 may use only/);
  assert.match(why, /2 stages fit: the largest stage needs .*; a hybrid of 2 replicas x 2 stages .* is the fewest stages that fit/);
  // Planned without compiling the model's layers, ZeRO-2 and -3 are not weighed: the stages stand.
  assert.match(why, /ZeRO-2 and -3 .*: not weighed.*\n.*auto chose a hybrid of 2 replicas x 2 stages/);
  assert.match(why, /predicted step .* ms/);
  assert.ok(split.prediction && split.prediction.samplesPerSecond > 0);
  const tight = cluster().workers(3).strategy("auto").memory(RUNTIME + Math.ceil(whole * 0.45)).spec();
  const three = makePlan(tight, summarizeModel(model), { batchSize: 30 });
  assert.equal(three.strategy, "pipeline");
  assert.match(three.explain(), /2 stages: skipped, 3 workers do not form whole replicas of 2 stages/);
  const hopeless = cluster().workers(2).strategy("auto").memory(2 ** 20).spec();
  assert.throws(() => makePlan(hopeless, summarizeModel(model), { batchSize: 32 }), configError(/does not fit on 2 workers/));
});

test("auto takes ZeRO-1 before splitting the model when a share of Adam's state makes it fit, and names what ZeRO-2 and -3 would need", () => {
  const model = deepClassifier(256, 10, { hidden: 4, width: 512 });
  const params = summarizeModel(model).paramCount * 4;
  // With Adam a replica holds 4 copies of the parameters (weights, gradient, two moments); ZeRO-1 over 4 workers 2.5.
  const spec = cluster().workers(4).strategy("auto").memory(RUNTIME + Math.ceil(params * 3.2)).spec();
  const adam = { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 };
  const zero = makePlan(spec, summarizeModel(model), { batchSize: 32, optimizer: adam, devices: devices(4, 2 ** 30) });
  if (zero.strategy !== "data") throw new Error(`data plan expected, got ${zero.strategy}`);
  assert.equal(zero.shard, "optimizer");
  const why = zero.explain();
  assert.match(why, /but worker 0 may use only/);
  assert.match(why, /auto chose sharded data parallelism, ZeRO-1 \(shard: "optimizer"\): each worker keeps 1\/4 of the optimizer's state and needs .* of /);
  // SGD keeps no state: ZeRO-1 saves nothing, and the model is split as before.
  const sgdSpec = cluster().workers(4).strategy("auto").memory(RUNTIME + Math.ceil(params * 1.5)).spec();
  const sgd = makePlan(sgdSpec, summarizeModel(model), { batchSize: 32, optimizer: { name: "sgd", learningRate: 0.01 }, devices: devices(4, 2 ** 30) });
  assert.notEqual(sgd.strategy, "data");
  assert.match(sgd.explain(), /ZeRO-1 \(shard: "optimizer"\) saves nothing here: the optimizer keeps no state; ZeRO-2 would need .* and ZeRO-3 .* per worker/);
  // Tighter than ZeRO-1's need: split, saying what ZeRO-1 would have needed.
  const tight = cluster().workers(4).strategy("auto").memory(RUNTIME + Math.ceil(params * 2.2)).spec();
  const split = makePlan(tight, summarizeModel(model), { batchSize: 32, optimizer: adam, devices: devices(4, 2 ** 30) });
  assert.notEqual(split.strategy, "data");
  assert.match(split.explain(), /ZeRO-1 \(shard: "optimizer", each worker 1\/4 of the optimizer's state\) would need .*, above .*; ZeRO-2 would need/);
});

test("predictions: a GPipe plan of equal stages predicts the theoretical bubble when links are free", () => {
  const model = tf.sequential({ layers: [tf.layers.dense({ units: 64, inputShape: [64] }), tf.layers.dense({ units: 64 }), tf.layers.dense({ units: 64 }), tf.layers.dense({ units: 64 })] });
  const spec = cluster().workers(4).strategy("pipeline", { microBatches: 8, schedule: "gpipe" }).spec();
  const fast = devices(4, 2 ** 30).map((d) => ({ ...d, linkBytesPerSecond: 1e15, linkLatencyMs: 0 }));
  const plan = makePlan(spec, summarizeModel(model), { batchSize: 64, devices: fast });
  if (plan.strategy === "data" || plan.strategy === "ps") throw new Error("pipeline plan expected");
  assert.ok(plan.prediction);
  // The last stage does its forward inside its backward: the stages are equal only up to that.
  assert.ok(Math.abs(plan.prediction.bubble - theoreticalBubble(4, 8)) < 0.08, `${plan.prediction.bubble} vs ${theoreticalBubble(4, 8)}`);
  const noDevices = cluster().workers(4).strategy("pipeline").plan(model, { batchSize: 64 });
  assert.equal(noDevices.prediction, null, "no prediction without measured devices");
});
