import assert from "node:assert/strict";
import { test } from "node:test";
import { machinesOf } from "../../sdk/plan/machines";
import { speedsOf } from "../../sdk/plan/speeds";
import { parseCoreList } from "../../sdk/util/cpu-set";
import { predictData } from "../../sdk/plan/predict";

const measured = { gflops: 40, kernelOverheadUs: 8, linkBytesPerSecond: 1e9, linkLatencyMs: 0.1 };

test("a machine's cores are the union of its workers' allowed cores, else the most one may use", () => {
  // Pinned to cores 0 and 1 (taskset, --cpu-bind): each may use 1, the machine has 2.
  const pinned = [{ host: "a", cpus: 1, cores: [0] }, { host: "a", cpus: 1, cores: [1] }];
  assert.deepEqual(machinesOf(pinned), [{ host: "a", workers: 2, cpus: 2 }]);
  assert.equal(speedsOf(pinned.map((d) => ({ ...d, ...measured })))!.coreSharing, 1);
  // Both pinned to core 0: they share it.
  const one = [{ host: "a", cpus: 1, cores: [0] }, { host: "a", cpus: 1, cores: [0] }];
  assert.equal(speedsOf(one.map((d) => ({ ...d, ...measured })))!.coreSharing, 2);
  // A worker that did not say which cores: the most any of them may use.
  assert.deepEqual(machinesOf([{ host: "b", cpus: 1, cores: [3] }, { host: "b", cpus: 4 }]), [{ host: "b", workers: 2, cpus: 4 }]);
  // The compute of two workers pinned apart is not doubled in the prediction.
  const o = { flopsPerSample: 1e6, layers: 4, gradientBytes: 4e5, globalBatch: 64, replicas: 2, feedBytes: 0 };
  const apart = predictData(o, speedsOf(pinned.map((d) => ({ ...d, ...measured })))!);
  const shared = predictData(o, speedsOf(one.map((d) => ({ ...d, ...measured })))!);
  assert.ok(Math.abs(shared.computeMs / apart.computeMs - 2) < 1e-9);
});

test("core lists as Linux writes them", () => {
  assert.deepEqual(parseCoreList("0-3,8,10-11"), [0, 1, 2, 3, 8, 10, 11]);
  assert.deepEqual(parseCoreList("5\n"), [5]);
  for (const bad of ["", "a", "3-1", "0-99999", "1,,2"]) assert.equal(parseCoreList(bad), undefined, bad);
});

test("PowerSGD's two all-reduces and a sync every H steps price the ring's latency so", () => {
  const s = speedsOf([{ host: "a", cpus: 2, ...measured }, { host: "b", cpus: 2, ...measured }])!;
  const o = { flopsPerSample: 1e6, layers: 4, gradientBytes: 4e5, globalBatch: 64, replicas: 2, feedBytes: 0 };
  const once = predictData(o, s).commMs;
  const phases = 2 * (2 - 1) * 0.1;
  assert.ok(Math.abs(predictData({ ...o, allReduces: 2 }, s).commMs - once - phases) < 1e-9);
  assert.ok(Math.abs(predictData({ ...o, allReduces: 1 / 8 }, s).commMs - (once - phases * (7 / 8))) < 1e-9);
});
