import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { MemoryWatch } from "../../sdk/worker/memory-watch";
import { memoryLines } from "../../sdk/metrics/memory-lines";
import { makePlan } from "../../sdk/strategies/make-plan";
import { cluster } from "../../sdk/index";
import { summarizeModel } from "../../sdk/plan/model-summary";

const MiB = 2 ** 20;

test("a fit's peak counts memory touched and freed between two steps, and starts again at the next load", async () => {
  const watch = new MemoryWatch(async () => undefined);
  await watch.start(0);
  await watch.loaded();
  // 64 MiB touched, then let go before the step is reported: only a high-water mark sees it.
  let big: Float64Array | null = new Float64Array((64 * MiB) / 8).fill(1);
  assert.equal(big[big.length - 1], 1);
  big = null;
  watch.stepDone();
  const first = watch.report();
  assert.equal(first.peakFrom, "kernel", "Linux keeps a resettable high-water mark (/proc/self/clear_refs)");
  // Not all 64: what the idle process held may have been given back meanwhile (59 MiB seen once in a full unit run).
  assert.ok(first.peakRssBytes - first.idleRssBytes >= 48 * MiB, `peak ${first.peakRssBytes} idle ${first.idleRssBytes}`);
  // The next model's fit does not inherit the last one's peak.
  await watch.start(0);
  await watch.loaded();
  watch.stepDone();
  const second = watch.report();
  assert.ok(second.peakRssBytes < first.peakRssBytes - 30 * MiB, `second ${second.peakRssBytes} first ${first.peakRssBytes}`);
});

test("the process without a model does not count arrays a released fit let go of", async () => {
  const watch = new MemoryWatch(async () => undefined);
  await watch.start(0);
  const before = watch.report().idleRssBytes;
  // A fit's training state: arrays touched, then let go at release (V8 frees an array's memory
  // only when the collection after the one that found it dead begins).
  let state: Float32Array[] | null = Array.from({ length: 8 }, () => new Float32Array((8 * MiB) / 4).fill(1));
  assert.equal(state[7]![0], 1);
  state = null;
  await watch.start(0);
  const after = watch.report().idleRssBytes;
  assert.ok(after - before < 16 * MiB, `64 MiB let go, yet the idle process grew ${((after - before) / MiB).toFixed(1)} MiB`);
});

test("memory lines set each replica's growth beside the plan's estimate", () => {
  const model = tf.sequential({ layers: [tf.layers.dense({ inputShape: [100], units: 1000 }), tf.layers.dense({ units: 10 })] });
  const plan = makePlan(cluster().workers(2).strategy("data").spec(), summarizeModel(model), { batchSize: 32, optimizer: { name: "adam", learningRate: 1e-3, beta1: 0.9, beta2: 0.999 } });
  const lines = memoryLines(plan, [{ rank: 1, role: "worker", idleRssBytes: 100 * MiB, loadPeakRssBytes: 100 * MiB, peakRssBytes: 101 * MiB, tensorBytes: 406040, peakFrom: "kernel" }]);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^rank 1 memory: peak resident set 101 MiB, 1\.0 MiB above the worker's without a model; the plan estimated 4\.\d MiB \(measured 0\.\d\dx; the peak 0\.97x the 104 MiB predicted with the process's own\); tensors held at the end 397 KiB$/);
  // A worker that loaded its own data (feed "workers") counts it in the prediction.
  const fed = memoryLines(plan, [{ rank: 0, role: "worker", idleRssBytes: 100 * MiB, loadPeakRssBytes: 100 * MiB, peakRssBytes: 104 * MiB, tensorBytes: 0, dataBytes: 2 * MiB, peakFrom: "kernel" }])[0]!;
  assert.match(fed, /the plan estimated 4\.\d MiB \+ 2\.0 MiB of data it loaded \(measured 0\.\d\dx; the peak 0\.9\dx the 10\d(\.\d)? MiB predicted/);
  model.dispose();
});
