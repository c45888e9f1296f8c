import assert from "node:assert/strict";
import { test } from "node:test";
import { cluster } from "../../sdk/cluster/builder";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { planParameterServers, formatPsPlan } from "../../sdk/strategies/ps/planner";
import { predictPs } from "../../sdk/plan/predict-ps";
import { speedsOf } from "../../sdk/plan/speeds";
import { deepClassifier } from "../helpers/models";

const worker = (host: string) => ({ backend: "native", device: "cpu", memoryBytes: 8e9, gflops: 40, kernelOverheadUs: 8, linkBytesPerSecond: 12.5e6, linkLatencyMs: 0.5, host, cpus: 1 });
const profile = { batches: [8, 64], layers: [], replicaStepMs: [4, 25], replicaStep: { native: true }, timedOn: "rank 0 (native)" };

test("sync servers: compute, then the pulls through each server's link one after another, the first worker pushing while the last pulls, each a round trip", () => {
  const s = speedsOf([worker("a"), worker("b")])!;
  const o = { flopsPerSample: 1e6, layers: 4, pullBytes: 9e5, pushBytes: 9e5, globalBatch: 128, replicas: 2, feedBytes: 0, profile };
  const one = predictPs({ ...o, mode: "sync" }, s, [{ share: 1, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 }]);
  // 2 workers x 0.9 MB through one 12.5 MB/s link: both pulls 144 ms, then the last worker's push 72 ms, beside a 25 ms step.
  assert.ok(Math.abs(one.computeMs - 25) < 1e-9);
  assert.ok(Math.abs(one.commMs - (144 + 72 + 4 * 0.5)) < 1e-9, `${one.commMs}`);
  // Pushes larger than pulls: one pull, then all the pushes.
  const big = predictPs({ ...o, pushBytes: 1.8e6, mode: "sync" }, s, [{ share: 1, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 }]);
  assert.ok(Math.abs(big.commMs - (72 + 288 + 2)) < 1e-9, `${big.commMs}`);
  // Two servers of half the bytes each halve the fan-in; a worker's own link then takes the whole model (72 ms).
  const two = predictPs({ ...o, mode: "sync" }, s, [0.5, 0.5].map((share) => ({ share, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 })));
  assert.ok(Math.abs(two.commMs - (72 + 72 + 2)) < 1e-9, `${two.commMs}`);
});

test("async servers: the slower of the workers' own cycles and what the servers' links pass", () => {
  const s = speedsOf([worker("a"), worker("b")])!;
  const o = { mode: "async" as const, flopsPerSample: 1e6, layers: 4, pullBytes: 9e5, pushBytes: 9e5, globalBatch: 128, replicas: 2, feedBytes: 0, profile };
  // Each worker alone: 25 ms + 72 ms pull + 72 ms push + 2 ms + the driver's round trip 1 ms = 172 ms. The
  // other worker is mid-pull with chance 72 / C, 36 ms of it left, and the same for pushes:
  // C = 172 + 2 * (72 / C) * 36, so C = (172 + sqrt(172^2 + 4 * 5184)) / 2 = 198.2 ms; 2 / C = 10.1
  // steps/s, below the 12.5 / 0.9 = 13.9 the server's link passes.
  const p = predictPs(o, s, [{ share: 1, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 }]);
  const cycle = (172 + Math.sqrt(172 ** 2 + 4 * 5184)) / 2;
  assert.ok(Math.abs(p.samplesPerSecond - (2 / (cycle / 1000)) * 64) < 1e-6, `${p.samplesPerSecond}`);
  assert.match(p.basis, /its own cycle the bound \(26\.2 ms of it behind the others' transfers\)/);
  // One worker waits for no one.
  const alone = predictPs({ ...o, replicas: 1, globalBatch: 64 }, speedsOf([worker("a")])!, [{ share: 1, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 }]);
  assert.match(alone.basis, /\(0\.0 ms of it behind/);
  // Four workers on the same server: its link is the bound.
  const s4 = speedsOf(["a", "b", "c", "d"].map(worker))!;
  const four = predictPs({ ...o, replicas: 4, globalBatch: 256 }, s4, [{ share: 1, linkBytesPerSecond: 12.5e6, latencySeconds: 5e-4 }]);
  assert.ok(Math.abs(four.samplesPerSecond - (12.5e6 / 9e5) * 64) < 1e-6, `${four.samplesPerSecond}`);
  assert.match(four.basis, /the servers' links the bound/);
});

test("a ps plan predicts where every worker's and server's link was measured, and says it", () => {
  const spec = cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }).spec();
  const model = summarizeModel(deepClassifier());
  const devices = [worker("a"), worker("b")];
  const plan = planParameterServers({ mode: "sync" }, spec, model, { batchSize: 64, devices, serverDevices: [worker("c")], profile });
  assert.ok(plan.prediction && plan.prediction.samplesPerSecond > 0);
  assert.match(formatPsPlan(plan), /predicted \d+ samples\/s .* the servers' links 13 MB\/s/);
  assert.match(plan.prediction.basis, /moving the shards through each process.* not counted/, "what the plan leaves out, said");
  assert.equal(planParameterServers({ mode: "sync" }, spec, model, { batchSize: 64, devices }).prediction, null, "no server measured: no prediction");
  // Every member said what its messages cost its CPU: the plan counts it.
  const handling = { messageMs: 0.3, msPerMB: 1.5 };
  const priced = planParameterServers({ mode: "sync" }, spec, model, { batchSize: 64, devices: devices.map((d) => ({ ...d, handling })), serverDevices: [{ ...worker("c"), handling }], profile });
  assert.match(priced.prediction!.basis, /each member's CPU for its messages at what the link probes cost it/);
});
