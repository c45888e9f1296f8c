import assert from "node:assert/strict";
import { test } from "node:test";
import { handlingCost } from "../../sdk/cluster/link-probe";
import { busiestCore } from "../../sdk/plan/core-load";
import { predictPs } from "../../sdk/plan/predict-ps";
import { speedsOf } from "../../sdk/plan/speeds";

test("the busiest core sums the work of every process that may run on it, each spread over its own cores", () => {
  const pinned = (core: number, busyMs: number, name: string) => ({ host: "m", cpus: 1, cores: [core], busyMs, name });
  // A server pinned beside worker 0: that core carries both.
  assert.deepEqual(busiestCore([pinned(0, 100, "worker 0"), pinned(1, 100, "worker 1"), pinned(0, 60, "server 0")]), { ms: 160, names: ["worker 0", "server 0"] });
  // Unpinned on a 2-core machine: each process's work spreads over both cores.
  const free = busiestCore([{ host: "m", cpus: 2, busyMs: 100, name: "a" }, { host: "m", cpus: 2, busyMs: 60, name: "b" }]);
  assert.equal(free.ms, 80);
  // On different machines, the same core numbers are different cores; a process that did not say its machine has one of its own.
  assert.equal(busiestCore([{ ...pinned(0, 100, "a"), host: "x" }, { ...pinned(0, 60, "b"), host: "y" }, { busyMs: 70, name: "c" }]).ms, 100);
});

test("what a message costs a member's CPU: the cheapest small probe, and the cheapest large one less that, per MB", () => {
  const cost = handlingCost([0.3, 0.2, 0.25], [4.2, 6], 2e6);
  assert.ok(cost && Math.abs(cost.messageMs - 0.2) < 1e-12 && Math.abs(cost.msPerMB - 2) < 1e-12, JSON.stringify(cost));
  assert.equal(handlingCost([undefined], [4], 2e6), undefined, "a tab cannot say: nothing is priced from a guess");
  assert.equal(handlingCost([0.5], [0.1], 2e6)?.msPerMB, 0, "never negative");
});

const worker = (core: number) => ({ gflops: 40, kernelOverheadUs: 8, linkBytesPerSecond: 1e9, linkLatencyMs: 0.05, host: "m", cpus: 1, cores: [core], handling: { messageMs: 0.2, msPerMB: 0.6 } });
const profile = { batches: [8, 64], layers: [], replicaStepMs: [4, 25], replicaStep: { native: true }, timedOn: "rank 0 (native)" };
const o = { flopsPerSample: 1e6, layers: 4, pullBytes: 4e7, pushBytes: 4e7, globalBatch: 128, replicas: 2, feedBytes: 0, profile };
const server = { share: 1, linkBytesPerSecond: 1e9, latencySeconds: 5e-5 };

test("a parameter server pinned beside a worker: the step is at least that core's work, which the links' speeds alone miss", () => {
  const s = speedsOf([worker(0), worker(1)])!;
  for (const mode of ["sync", "async"] as const) {
    const linksOnly = predictPs({ ...o, mode }, s, [server]);
    // Worker 0: 25 ms of compute, 3 messages (the feed, a pull and a push) and 80 MB at 0.6 ms/MB: 73.6 ms.
    // The server: 4 messages and 160 MB (both workers' pulls and pushes): 96.8 ms. Together on core 0: 170.4 ms.
    const beside = predictPs({ ...o, mode }, s, [server], { workers: [worker(0), worker(1)], servers: [worker(0)] });
    assert.ok(Math.abs(beside.stepMs - 170.4) < 1e-9, `${mode}: ${beside.stepMs}`);
    assert.ok(linksOnly.stepMs < 170.4, `${mode}: the links alone priced ${linksOnly.stepMs} ms`);
    assert.match(beside.basis, /the busiest core bounds it: worker 0 and server 0 on it spend 170\.4 ms of CPU a step/);
    // The driver on the same machine, free to run on either core: its request and answer with each worker (1 ms each) add half of their 2 ms to core 0.
    const driver = { host: "m", cpus: 2, cores: [0, 1], handling: { messageMs: 1, msPerMB: 0.6 } };
    const driven = predictPs({ ...o, mode }, s, [server], { workers: [worker(0), worker(1)], servers: [worker(0)], driver });
    assert.ok(Math.abs(driven.stepMs - 171.4) < 1e-9, `${mode}: ${driven.stepMs}`);
    assert.match(driven.basis, /worker 0, server 0 and the driver on it spend 171\.4 ms/);
    // On a machine of its own it carries 96.8 ms: the links still price the step.
    const apart = predictPs({ ...o, mode }, s, [server], { workers: [worker(0), worker(1)], servers: [{ ...worker(0), host: "n" }] });
    assert.equal(apart.stepMs, linksOnly.stepMs);
    assert.doesNotMatch(apart.basis, /busiest core/);
    // Two workers pinned to one core: the price doubles each one's compute (they take turns), which the core's sum must not count twice.
    const crowded = speedsOf([worker(0), worker(0)])!;
    const shared = predictPs({ ...o, mode }, crowded, [server], { workers: [worker(0), worker(0)], servers: [{ ...worker(0), host: "n" }] });
    const links = predictPs({ ...o, mode }, crowded, [server]).stepMs;
    // Core 0 carries 2 x 73.6 ms (the compute once each), not 2 x 98.6.
    assert.ok(Math.abs(shared.stepMs - Math.max(links, 147.2)) < 1e-9, `${mode}: ${shared.stepMs} against the links' ${links}`);
    // A member that did not say what its messages cost: nothing is priced from a guess.
    const { handling: _, ...unsaid } = worker(0);
    assert.equal(predictPs({ ...o, mode }, s, [server], { workers: [worker(0), worker(1)], servers: [unsaid] }).stepMs, linksOnly.stepMs);
  }
});
