import assert from "node:assert/strict";
import { test } from "node:test";
import { ringSpeedOf, typicalCpuMs } from "../../sdk/driver/ring-probe";
import { ringCpuOf } from "../../sdk/plan/ring-cpu";
import { predictData } from "../../sdk/plan/predict";
import { speedsOf } from "../../sdk/plan/speeds";

const BYTES = [4096, 16 * 2 ** 20] as const;

test("what an all-reduce costs a member's CPU: a fixed part and a part per byte, from two sizes, never below nothing", () => {
  const c = ringCpuOf(BYTES, [0.5 + 4096 * 1e-6, 0.5 + 16 * 2 ** 20 * 1e-6]);
  assert.ok(Math.abs(c.fixedMs - 0.5) < 1e-9 && Math.abs(c.msPerByte - 1e-6) < 1e-15, JSON.stringify(c));
  // The large one cost less than the small one (noise): its bytes cost nothing, never less.
  assert.deepEqual(ringCpuOf(BYTES, [2, 1]), { fixedMs: 2, msPerByte: 0 });
  assert.equal(ringCpuOf(BYTES, [0, 10]).fixedMs, 0);
});

test("a size's all-reduce costs what most of its repeats cost: the first (warming the path) and outliers left out", () => {
  // The first compiled the ring's code; one of the rest was stretched by another process.
  assert.equal(typicalCpuMs([40, 3, 4, 90, 5]), 4.5);
  assert.equal(typicalCpuMs([40, 3, 4, 90]), 4);
  assert.equal(typicalCpuMs([7]), 7);
  assert.equal(typicalCpuMs([]), undefined);
});

test("the ring's speed carries every member's CPU terms only when every member said them", () => {
  const said = ringSpeedOf(2, "websocket", BYTES, [1, 20], { cpuMs: [[0.5, 30], [0.6, 40]] });
  assert.equal(said.cpu?.length, 2);
  assert.ok(Math.abs(said.cpu![1]!.msPerByte - (40 - 0.6) / (BYTES[1] - BYTES[0])) < 1e-15);
  // A tab cannot read its CPU time: the ring was still timed, its CPU is not priced from a guess.
  assert.equal(ringSpeedOf(2, "websocket", BYTES, [1, 20]).cpu, undefined);
  assert.equal(ringSpeedOf(3, "websocket", BYTES, [1, 20], { cpuMs: [[0.5, 30], [0.6, 40]] }).cpu, undefined);
});

const device = (core: number) => ({ gflops: 40, kernelOverheadUs: 8, linkBytesPerSecond: 1e9, linkLatencyMs: 0.05, host: "m", cpus: 1, cores: [core] });
const profile = { batches: [32, 64], layers: [], replicaStepMs: [30, 50], replicaStep: { native: true }, timedOn: "rank 0 (native)" };
const o = { flopsPerSample: 1e6, layers: 3, gradientBytes: 45.6e6, globalBatch: 128, replicas: 2, feedBytes: 0, profile };
// A hop at 1.2 GB/s: 38 ms for 45.6 MB, 0.1 ms a phase. Over the WebSocket plane each worker's process spends 2.5 ms per MB all-reduced.
const wall = (bytes: number): number => (bytes / 1.2e9) * 1000 + 2 * 0.1;
const ring = (msPerMB: number) => ringSpeedOf(2, "websocket", BYTES, [wall(BYTES[0]), wall(BYTES[1])], { cpuMs: [0, 1].map(() => [0.2 + (msPerMB * BYTES[0]) / 1e6, 0.2 + (msPerMB * BYTES[1]) / 1e6] as const) });

test("a data-parallel step is at least its busiest core's CPU time: each worker's compute and what its all-reduce cost it", () => {
  const workers = [device(0), device(1)];
  const s = speedsOf(workers, ring(2.5))!;
  const links = predictData(o, s);
  // 50 ms of compute, the all-reduce, and the driver's request and answer (0.05 ms each way).
  assert.ok(Math.abs(links.stepMs - (50 + wall(45.6e6) + 0.1)) < 1e-6, `the links alone: ${links.stepMs}`);
  // Pinned to a core each: 50 ms of compute and 0.2 + 45.6 x 2.5 ms of the all-reduce's CPU on each core.
  const seated = predictData({ ...o, seats: { workers } }, s);
  assert.ok(Math.abs(seated.stepMs - (50 + 0.2 + 114)) < 1e-6, `${seated.stepMs}`);
  assert.ok(Math.abs(seated.samplesPerSecond - (128 / seated.stepMs) * 1000) < 1e-9);
  assert.ok(Math.abs(seated.commMs - links.commMs - (seated.stepMs - links.stepMs)) < 1e-6 && seated.computeMs === links.computeMs, "the core's extra time is the communication's");
  assert.match(seated.basis, /each worker's CPU for its all-reduces as the ring probe timed it; the busiest core bounds it: worker 0 on it spend 164\.2 ms of CPU a step/);
  // A ring cheap in CPU (the native plane's): the links price it, and the plan says what it counted.
  const cheap = predictData({ ...o, seats: { workers } }, speedsOf(workers, ring(0.2))!);
  assert.equal(cheap.stepMs, predictData(o, speedsOf(workers, ring(0.2))!).stepMs);
  assert.match(cheap.basis, /as the ring probe timed it$/);
  // Where the ring's members could not say, or nothing says where the workers run, nothing is bounded.
  const unsaid = ringSpeedOf(2, "websocket", BYTES, [wall(BYTES[0]), wall(BYTES[1])]);
  assert.equal(predictData({ ...o, seats: { workers } }, speedsOf(workers, unsaid)!).stepMs, predictData(o, speedsOf(workers, unsaid)!).stepMs);
  assert.doesNotMatch(predictData(o, s).basis, /busiest core|ring probe timed/);
});

test("two workers to a core: their compute counts once (they take turns), their all-reduces' CPU twice; the driver beside them adds its messages", () => {
  const crowded = [device(0), device(0)];
  const s = speedsOf(crowded, ring(2.5))!;
  // The shared step's compute is priced 2 x 50 ms; each worker spends half of that wall time on the core.
  const both = predictData({ ...o, seats: { workers: crowded } }, s);
  assert.ok(Math.abs(both.stepMs - Math.max(predictData(o, s).stepMs, 100 + 2 * 114.2)) < 1e-6, `${both.stepMs}`);
  // The driver pinned to core 1 of the same machine: a request and its answer per worker on a core nobody else uses.
  const driver = { host: "m", cpus: 1, cores: [1], handling: { messageMs: 1, msPerMB: 1 } };
  assert.equal(predictData({ ...o, seats: { workers: crowded, driver } }, s).stepMs, both.stepMs);
  // Beside the workers on core 0, its 2 ms are theirs too.
  const beside = predictData({ ...o, seats: { workers: crowded, driver: { ...driver, cores: [0] } } }, s);
  assert.ok(Math.abs(beside.stepMs - (both.stepMs + 2)) < 1e-6, `${beside.stepMs}`);
  assert.match(beside.basis, /worker 0, worker 1 and the driver on it/);
});
