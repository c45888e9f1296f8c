import assert from "node:assert/strict";
import { test } from "node:test";
import { predictData, type Speeds } from "../../sdk/plan/predict";
import { predictPipeline } from "../../sdk/plan/predict-pipeline";
import { atBatch, layersMs, profileBatches, type ModelProfile } from "../../sdk/plan/profile";
import { speedsOf } from "../../sdk/plan/speeds";
import { gpipe } from "../../sdk/plan/schedules";
import { powerSgdWork } from "../../sdk/strategies/data/power-sgd-work";
import { localSyncWork, replicaWork } from "../../sdk/strategies/data/local-sync-work";
import { hookPrice } from "../../sdk/strategies/data/hook-prices";
import { summarizeModel } from "../../sdk/plan/model-summary";
import * as tf from "@tensorflow/tfjs";

const close = (a: number, b: number, what: string): void => assert.ok(Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);

test("a profiled time is exact at the batches timed, on the line between them, and extends along the nearest segment", () => {
  const batches = [8, 64];
  const ms = [2, 16];
  close(atBatch(batches, ms, 8), 2, "at 8");
  close(atBatch(batches, ms, 64), 16, "at 64");
  close(atBatch(batches, ms, 32), 2 + (24 * 14) / 56, "between");
  close(atBatch(batches, ms, 128), 16 + (64 * 14) / 56, "above");
  close(atBatch(batches, ms, 4), 2 - (4 * 14) / 56, "below");
  close(atBatch([8, 32, 64], [2, 5, 20], 48), 5 + (16 * 15) / 32, "three batches: the segment around it");
  // Noise between close batches must not make more samples cost less, nor time negative.
  close(atBatch(batches, [3, 2], 64), 3, "no negative slope");
  assert.equal(atBatch(batches, [0, 0.1], 1), 0);
  close(atBatch([16], [4], 8), 2, "one batch: proportional");
  assert.ok(Number.isNaN(atBatch(batches, [1], 8)), "times that do not match the batches are no time");
  assert.deepEqual(profileBatches(64), [8, 64]);
  assert.deepEqual(profileBatches(4), [1, 4]);
  assert.deepEqual(profileBatches(1), [1]);
});

const profile: ModelProfile = {
  batches: [8, 64],
  layers: [
    { forwardMs: [1, 8], backwardMs: [2, 16] },
    { forwardMs: [0.5, 4], backwardMs: [1, 8] },
    { forwardMs: [0.25, 2], backwardMs: [0.5, 4] },
  ],
  replicaStepMs: [3, 24],
  replicaStep: { native: true },
  timedOn: "rank 0 (native)",
};

const speeds = (coreSharing = 1): Speeds => ({ flopsPerSecond: 1e10, kernelSeconds: 1e-5, linkBytesPerSecond: 1e8, latencySeconds: 1e-4, coreSharing });

test("data parallelism predicts a replica's compute from its profiled step, slowed by workers sharing cores", () => {
  const o = { flopsPerSample: 1e6, layers: 3, gradientBytes: 4e6, globalBatch: 64, replicas: 2, feedBytes: 64 * 800 };
  const p = predictData({ ...o, profile }, speeds());
  close(p.computeMs, 12, "the step at 32 samples");
  close(p.commMs, ((2 * 1) / 2) * (4e6 / 1e8) * 1000 + 2 * 1e-4 * 1000, "ring all-reduce");
  close(p.stepMs, p.computeMs + p.commMs + (2 * 1e-4 + (64 * 800) / 1e8) * 1000, "plus a round trip and the driver's feed");
  assert.match(p.basis, /timed on rank 0 \(native\) at batches 8 and 64/);
  const shared = predictData({ ...o, profile }, speeds(2));
  close(shared.computeMs, 24, "two workers per core take twice as long");
  assert.match(shared.basis, /2\.0 workers per core/);
  const measured = predictData({ ...o, profile: { ...profile, sharing: { workers: 2, slowdown: 1.5 } } }, speeds());
  close(measured.computeMs, 18, "a measured slowdown replaces workers per core");
  const outOfStep = predictData({ ...o, profile: { ...profile, sharing: { workers: 4, slowdown: 1.2 } } }, speeds(2));
  close(outOfStep.computeMs, 24, "but never below workers per core");
  assert.match(measured.basis, /2 workers on one machine stepping at once each 1\.50x as long as one alone/);
  const flops = predictData(o, speeds());
  close(flops.computeMs, ((3 * 1e6 * 32) / 1e10 + 3 * 9 * 1e-5) * 1000, "without a profile: FLOPs and kernel counts");
  assert.match(flops.basis, /no profile was taken/);
  // Work beside the step (PowerSGD's), slowed by shared cores as the step is, and said in the basis.
  const also = predictData({ ...o, profile, also: { what: "PowerSGD's work at rank 2", ms: 5, timed: true } }, speeds(2));
  close(also.computeMs, 24 + 10, "the step's 24 ms and the 5 ms work, both at two workers per core");
  assert.match(also.basis, /, PowerSGD's work at rank 2 5\.0 ms a step \(timed on a worker\)$/);
  // A step too big to time on a capped worker: its layers' forward and backward at 32 samples, added up.
  const untimed = { ...profile, replicaStepMs: [], replicaStep: { native: false, why: "not timed: too big" } };
  const layered = predictData({ ...o, profile: untimed }, speeds());
  close(layered.computeMs, 4 + 8 + 2 + 4 + 1 + 2, "the layers' times at 32 samples");
  assert.ok(layered.timed);
  assert.match(layered.basis, /the model's layers timed on rank 0 \(native\) at batches 8 and 64 \(its whole step was not timed: too big: the step is its layers' forward and backward passes added up\)/);
});

test("PowerSGD's work in a plan: as the profile timed it at the plan's rank, else from its FLOPs at the matrix speed", () => {
  // A 10 x 20 kernel (its bias goes whole): 8 n m r + 2 n m FLOPs at rank 3.
  const model = summarizeModel(tf.sequential({ layers: [tf.layers.dense({ inputShape: [10], units: 20 })] }));
  const flops = powerSgdWork(model, 3, profile, speeds());
  assert.equal(flops.timed, false);
  close(flops.ms, ((8 * 200 * 3 + 2 * 200) / 1e10) * 1000, "FLOPs at 10 GFLOP/s");
  const timed = powerSgdWork(model, 3, { ...profile, hook: { spec: { kind: "powersgd" as const, rank: 3 }, ms: 7 } }, speeds());
  assert.deepEqual([timed.ms, timed.timed], [7, true]);
  // Timed at another rank: not this plan's work.
  assert.equal(powerSgdWork(model, 2, { ...profile, hook: { spec: { kind: "powersgd" as const, rank: 3 }, ms: 7 } }, speeds()).timed, false);
});

test("a sync's own work in a plan: as the profile timed it with the plan's outer optimizer, else from its passes; a share of it each step", () => {
  const model = summarizeModel(tf.sequential({ layers: [tf.layers.dense({ inputShape: [10], units: 20 })] }));
  const outer = { name: "momentum" as const, learningRate: 0.7, momentum: 0.9, useNesterov: true };
  const passes = localSyncWork(model, outer, profile, speeds());
  assert.equal(passes.timed, false);
  close(passes.ms, ((12 * 220) / 1e10) * 1000, "12 passes over 220 weights at 10 GFLOP/s");
  const timedProfile = { ...profile, sum: { spec: { kind: "local" as const, outer }, ms: 40 } };
  assert.deepEqual([localSyncWork(model, outer, timedProfile, speeds()).ms, localSyncWork(model, outer, timedProfile, speeds()).timed], [40, true]);
  // Timed with another outer optimizer: not this plan's work.
  assert.equal(localSyncWork(model, { ...outer, learningRate: 1 }, timedProfile, speeds()).timed, false);
  // Every 8 steps: an eighth of the sync a step; PowerSGD's work with it only at the syncs too.
  const withPower = { ...timedProfile, hook: { spec: { kind: "powersgd" as const, rank: 3 }, ms: 8 } };
  const work = replicaWork(model, { hookWork: hookPrice({ kind: "powersgd", rank: 3 }, model).work(withPower, speeds()), sync: { every: 8, outer }, syncShare: 1 / 8 }, withPower, speeds())!;
  close(work.ms, (40 + 8) / 8, "a step's share");
  assert.equal(work.timed, true);
  assert.match(work.what, /^PowerSGD's work at rank 3 and a sync's own work \(the weights' change and the outer momentum update\) over 8\.0 steps a sync,$/);
  assert.equal(replicaWork(model, { hookWork: hookPrice(null, model).work(profile, speeds()), sync: null, syncShare: 1 }, profile, speeds()), undefined);
});

test("a pipeline's stages cost their profiled layers, the backward recomputing the forward", () => {
  const stages = [
    { from: 0, to: 2, flopsPerSample: 0, layers: 2, gradientBytes: 0, outputElementsPerSample: 100 },
    { from: 2, to: 3, flopsPerSample: 0, layers: 1, gradientBytes: 0, outputElementsPerSample: 10 },
  ];
  const s = speeds();
  const p = predictPipeline({ stages, schedule: gpipe(2, 1), microBatchSize: 64, globalBatch: 64, replicas: 1, feedBytes: 0, profile }, s);
  const send = ((100 * 4 * 64) / 1e8 + 1e-4) * 1000;
  const s0 = layersMs(profile, 0, 2, 64);
  const s1 = layersMs(profile, 2, 3, 64);
  // One micro-batch: stage 0's forward and send, stage 1's forward, backward and send back, stage 0's backward.
  const makespan = s0.forwardMs + send + (s1.forwardMs + s1.backwardMs + send) + (s0.forwardMs + s0.backwardMs);
  close(p.computeMs, makespan, "makespan");
  close(p.stepMs, makespan + 2 * 1e-4 * 1000, "plus a round trip");
  // One micro-batch never has two stages computing at once: sharing the machine costs nothing here.
  const crowded = predictPipeline({ stages, schedule: gpipe(2, 1), microBatchSize: 64, globalBatch: 64, replicas: 1, feedBytes: 0, profile: { ...profile, sharing: { workers: 2, slowdown: 3 } } }, s);
  close(crowded.computeMs, makespan, "no overlap, no slowdown");
  const four = predictPipeline({ stages, schedule: gpipe(2, 4), microBatchSize: 16, globalBatch: 64, replicas: 1, feedBytes: 0, profile }, s);
  const shared = predictPipeline({ stages, schedule: gpipe(2, 4), microBatchSize: 16, globalBatch: 64, replicas: 1, feedBytes: 0, profile: { ...profile, sharing: { workers: 2, slowdown: 2 } } }, s);
  assert.ok(shared.computeMs > four.computeMs, "overlapping micro-batches slow each other where the machine is shared");
});

test("workers share cores on the most crowded machine only", () => {
  const dev = (host: string | undefined, cpus: number | undefined) => ({ gflops: 10, kernelOverheadUs: 5, linkBytesPerSecond: 1e8, linkLatencyMs: 0.1, ...(host ? { host } : {}), ...(cpus ? { cpus } : {}) });
  assert.equal(speedsOf([dev("a", 2), dev("a", 2)])!.coreSharing, 1);
  assert.equal(speedsOf([dev("a", 2), dev("a", 2), dev("a", 2), dev("b", 4)])!.coreSharing, 1.5);
  assert.equal(speedsOf([dev("a", 1), dev("b", 1)])!.coreSharing, 1);
  assert.equal(speedsOf([dev(undefined, undefined), dev(undefined, undefined)])!.coreSharing, 1);
});
