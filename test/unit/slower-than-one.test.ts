import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { measuredSlowerThanOne, predictedSlowerThanOne } from "../../sdk/plan/slower-than-one";
import { makePlan } from "../../sdk/strategies/make-plan";
import { dataStrategy } from "../../sdk/strategies/data/index";
import { summarize } from "../../sdk/metrics/summary";
import type { RunRecord, StepRecord } from "../../sdk/metrics/records";
import type { ModelProfile } from "../../sdk/plan/profile";

/** A 10M-parameter MLP, the model a user found training at half speed on 2 workers. */
function bigMlp(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ inputShape: [784], units: 3000, activation: "relu" }), tf.layers.dense({ units: 3000, activation: "relu" }), tf.layers.dense({ units: 10, activation: "softmax" })] });
}

/** A profile of the replica step timed at batches 8 and 64 (`at64` ms there). */
function profileOf(at64: number): ModelProfile {
  return { batches: [8, 64], layers: [], replicaStepMs: [at64 / 6, at64], replicaStep: { native: true }, timedOn: "rank 0 (native)" };
}

/** Two workers measured at join: 20 GFLOP/s, 8 us per kernel, and a link of `linkMBs` MB/s. */
function devices(linkMBs: number) {
  return [0, 1].map(() => ({ backend: "native", device: "cpu", memoryBytes: 2 ** 32, gflops: 20, kernelOverheadUs: 8, linkBytesPerSecond: linkMBs * 1e6, linkLatencyMs: 0.4 }));
}

test("a data plan predicted slower than one worker says so in toString() and explain(), with the all-reduce against the compute it splits", () => {
  const model = bigMlp();
  const spec = cluster().workers(2).strategy("data").spec();
  const slow = makePlan(spec, summarizeModel(model), { batchSize: 64, devices: devices(300) });
  assert.ok(slow.prediction?.oneWorker);
  assert.ok(slow.prediction.samplesPerSecond < slow.prediction.oneWorker.samplesPerSecond);
  assert.match(String(slow), /SLOWER than one worker \(\d+ samples\/s\); explain\(\) says why/);
  assert.match(slow.explain(), /predicted SLOWER than one worker: \d+ samples\/s on 2 workers against \d+ on one, because each step's all-reduce of 43\.4 MiB \([\d.]+ ms\) costs more than splitting the batch saves/);
  // Without a profile the compute is FLOPs arithmetic: no advice rests on it.
  assert.match(slow.explain(), /estimated from the model's FLOPs, not timed, so this comparison is unmeasured: cluster\.profile/);
  assert.doesNotMatch(slow.explain(), /use fewer workers/);
  const timed = makePlan(spec, summarizeModel(model), { batchSize: 64, devices: devices(300), profile: profileOf(200) });
  assert.match(timed.explain(), /predicted SLOWER than one worker: .*; use fewer workers, a larger batch per step/);
  // The same model with a link 100x faster: two workers win, and nothing is said.
  const fast = makePlan(spec, summarizeModel(model), { batchSize: 64, devices: devices(30_000) });
  assert.ok(fast.prediction!.samplesPerSecond > fast.prediction!.oneWorker!.samplesPerSecond);
  assert.doesNotMatch(String(fast) + fast.explain(), /SLOWER/);
  model.dispose();
});

test("predictedSlowerThanOne: silent for one worker and when the cluster is faster", () => {
  const p = { stepMs: 100, computeMs: 50, commMs: 48, bubble: 0, samplesPerSecond: 640, basis: "" };
  const one = { ...p, stepMs: 90, computeMs: 90, commMs: 0, samplesPerSecond: 711 };
  assert.match(predictedSlowerThanOne({ workers: 2, gradientBytes: 2 ** 20, prediction: p, one })!, /640 samples\/s on 2 workers against 711 on one.*1\.0 MiB \(48\.0 ms\)/);
  assert.equal(predictedSlowerThanOne({ workers: 1, gradientBytes: 2 ** 20, prediction: p, one }), null);
  assert.equal(predictedSlowerThanOne({ workers: 2, gradientBytes: 2 ** 20, prediction: { ...p, samplesPerSecond: 800 }, one }), null);
});

test("measuredSlowerThanOne: a step longer than one worker's, against the prediction or N x the measured compute; silent when faster or too few steps", () => {
  const ranks = [{ computeMs: 220, commMs: 110, waitMs: 20 }, { computeMs: 226, commMs: 112, waitMs: 25 }];
  const base = { workers: 2, gradientBytes: 43.4 * 2 ** 20, measuredSteps: 17, ranks };
  const vsPrediction = measuredSlowerThanOne({ ...base, medianStepMs: 370, oneWorkerMs: 258 })!;
  assert.match(vsPrediction, /a step took 370\.0 ms \(median\): 223\.0 ms computing on each worker, 111\.0 ms all-reducing 43\.4 MiB and 22\.5 ms waiting, 1\.4x what one worker would take: about 258\.0 ms/);
  assert.match(vsPrediction, /predicted from the step timed on a worker/);
  assert.match(vsPrediction, /sharing cores\?/, "2 x 223 ms of compute is more than one worker's 258 ms");
  assert.match(measuredSlowerThanOne({ ...base, medianStepMs: 470 })!, /about 446\.0 ms for the whole batch \(2 x 223\.0 ms\)/);
  assert.equal(measuredSlowerThanOne({ ...base, medianStepMs: 420 }), null, "below 2 x the compute");
  assert.equal(measuredSlowerThanOne({ ...base, medianStepMs: 250, oneWorkerMs: 258 }), null);
  assert.equal(measuredSlowerThanOne({ ...base, medianStepMs: 300, oneWorkerMs: 258 }), null, "within the cost model's error of the prediction: not said");
  assert.equal(measuredSlowerThanOne({ ...base, medianStepMs: 370, oneWorkerMs: 258, measuredSteps: 2 }), null);
  assert.equal(measuredSlowerThanOne({ ...base, workers: 1, medianStepMs: 370, oneWorkerMs: 258 }), null);
});

test("a data run whose steps took longer than one worker would have says so in its notes, against a timed prediction only", () => {
  const model = bigMlp();
  const plan = makePlan(cluster().workers(2).strategy("data").spec(), summarizeModel(model), { batchSize: 64, devices: devices(300), profile: profileOf(250) });
  const untimed = makePlan(cluster().workers(2).strategy("data").spec(), summarizeModel(model), { batchSize: 64, devices: devices(300) });
  model.dispose();
  const step = (i: number): StepRecord => ({
    step: i, epoch: 0, samples: 64, loss: 2.3, ms: 370, endMs: (i + 1) * 370, straggler: 1,
    workers: [0, 1].map((rank) => ({ rank, computeMs: 223, commMs: 111, waitMs: 22, applyMs: 5, startMs: i * 370 })),
  });
  const record = { history: Array.from({ length: 12 }, (_, i) => step(i)), plan, workers: [0, 1].map((rank) => ({ rank, info: { backend: "native", device: "cpu" } })), seed: 1, epochs: 1, wallMs: 12 * 370 } as unknown as RunRecord;
  assert.ok(dataStrategy.owns(plan));
  const notes = dataStrategy.describe(record, plan, summarize(record));
  assert.ok(notes.lines.some((l) => /^SLOWER than one worker would be: a step took 370\.0 ms.*predicted from the step timed on a worker/.test(l)), notes.lines.join("\n"));
  // From FLOPs alone one worker was predicted far faster than 370 ms; only 2 x the measured 223 ms counts, and 370 is below it.
  assert.ok(dataStrategy.owns(untimed) && untimed.prediction!.oneWorker!.stepMs < 300);
  assert.ok(!dataStrategy.describe({ ...record, plan: untimed } as RunRecord, untimed, summarize(record)).lines.some((l) => /SLOWER/.test(l)));
  const quick = { ...record, history: record.history.map((s) => ({ ...s, ms: 100 })) } as RunRecord;
  assert.ok(!dataStrategy.describe(quick, plan, summarize(quick)).lines.some((l) => /SLOWER/.test(l)));
});
