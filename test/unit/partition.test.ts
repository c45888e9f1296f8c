import assert from "node:assert/strict";
import { test } from "node:test";
import type { LayerSummary } from "../../sdk/plan/model-summary";
import { partition, stageCost, stageNeedBytes, type PartitionRequest } from "../../sdk/plan/partition";

function layers(flops: number[], params: number[] = flops.map(() => 10)): LayerSummary[] {
  return flops.map((f, i) => ({ name: `l${i}`, className: "Dense", params: params[i]!, trainableParams: params[i]!, inputShape: [null, 4], outputShape: [null, 4], flopsPerSample: f }));
}

function request(ls: LayerSummary[], stages: number, memory = Infinity): PartitionRequest {
  return { layers: ls, stages, microBatchSize: 2, optimizerSlots: 0, inFlight: () => 1, memoryBytes: () => memory };
}

/** Every way to cut L layers into S non-empty contiguous ranges. */
function* cuts(L: number, S: number, from = 0): Generator<number[]> {
  if (S === 1) {
    yield [from, L];
    return;
  }
  for (let i = from + 1; i <= L - S + 1; i++) for (const rest of cuts(L, S - 1, i)) yield [from, ...rest];
}

test("the partitioner finds the split with the smallest slowest stage (checked against every split)", () => {
  let seed = 7;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let trial = 0; trial < 60; trial++) {
    const L = 2 + Math.floor(rand() * 7);
    const S = 1 + Math.floor(rand() * Math.min(L, 4));
    const ls = layers(Array.from({ length: L }, () => Math.floor(rand() * 100) + 1));
    const p = partition(request(ls, S));
    assert.ok(p.ok);
    const got = Math.max(...p.stages.map((s) => s.flopsPerSample));
    let best = Infinity;
    for (const bounds of cuts(L, S)) {
      const worst = Math.max(...bounds.slice(0, -1).map((b, i) => ls.slice(b, bounds[i + 1]).reduce((n, l) => n + l.flopsPerSample, 0)));
      best = Math.min(best, worst);
    }
    assert.equal(got, best, `L=${L} S=${S}`);
    assert.equal(p.stages[0]!.from, 0);
    assert.equal(p.stages[S - 1]!.to, L);
    p.stages.forEach((s, i) => i > 0 && assert.equal(s.from, p.stages[i - 1]!.to));
  }
});

test("memory comes first: a cheaper split that overflows a stage is not taken", () => {
  // Equal FLOPs, but layer 0 is heavy in parameters: it must sit alone.
  const ls = layers([10, 10, 10, 10], [1000, 10, 10, 10]);
  const r = request(ls, 2, stageNeedBytes(stageCost(request(ls, 2), 0, 0, 1)));
  const p = partition(r);
  assert.ok(p.ok);
  assert.deepEqual(p.stages.map((s) => [s.from, s.to]), [[0, 1], [1, 4]]);
  for (const s of p.stages) assert.ok(stageNeedBytes(s) <= r.memoryBytes(0));
});

test("when nothing fits, the reason says which layer is too big for how much memory", () => {
  const p = partition(request(layers([1, 1], [1e6, 10]), 2, 1024 * 1024));
  assert.equal(p.ok, false);
  assert.match((p as { reason: string }).reason, /layer 0 "l0" alone needs 10\.0 MiB; stage 0 may use 1\.0 MiB/);
  const q = partition(request(layers([1, 1]), 3));
  assert.match((q as { reason: string }).reason, /3 stages cannot split 2 layers/);
});

test("pinned stages keep their ranges and the others are split around them", () => {
  const ls = layers([5, 5, 5, 5, 5, 5]);
  const p = partition({ ...request(ls, 3), pinned: new Map([[0, [0, 4] as const]]) });
  assert.ok(p.ok);
  assert.deepEqual(p.stages.map((s) => [s.from, s.to]), [[0, 4], [4, 5], [5, 6]]);
});

test("a stage's activation memory grows with the micro-batches it holds in flight", () => {
  const ls = layers([1, 1]);
  const one = stageCost({ ...request(ls, 1), inFlight: () => 1 }, 0, 0, 2);
  const four = stageCost({ ...request(ls, 1), inFlight: () => 4 }, 0, 0, 2);
  // Each micro-batch in flight keeps its input: 4 elements x 4 bytes x 2 samples.
  assert.equal(four.activationBytes - one.activationBytes, 3 * 4 * 4 * 2);
  assert.equal(one.stateBytes, 20 * 4 * 2);
});
