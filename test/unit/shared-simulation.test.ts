import assert from "node:assert/strict";
import { test } from "node:test";
import { gpipe, oneFOneB, simulate } from "../../sdk/plan/schedules";
import { simulateShared } from "../../sdk/plan/shared-simulation";

const unit = (_s: number, a: { kind: "F" | "B" }): number => (a.kind === "F" ? 1 : 2);
const alone = (_s: number, a: { kind: "F" | "B" }) => ({ computeMs: unit(_s, a), sendMs: 0 });

test("with no slowdown, sharing the machine changes nothing: the schedule runs as simulate() runs it", () => {
  for (const s of [gpipe(2, 1), gpipe(4, 8), oneFOneB(2, 4), oneFOneB(4, 8)]) {
    assert.deepEqual(simulateShared(s, alone, () => 1), simulate(s, unit), `${s.name} ${s.stages}x${s.microBatches}`);
  }
});

test("actions slow down only while others compute beside them", () => {
  // One micro-batch: never two stages at once, so a slowdown for two busy stages does not apply.
  const one = simulateShared(gpipe(2, 1), alone, (busy) => (busy > 1 ? 3 : 1));
  assert.deepEqual(one, simulate(gpipe(2, 1), unit));
  // Two stages, two micro-batches with F = 1: stage 1's F0 (time 1-2) overlaps stage 0's F1.
  const both = simulateShared(gpipe(2, 2), alone, (busy) => busy);
  const s0 = both[0]!;
  const s1 = both[1]!;
  assert.deepEqual([s0[0]!.start, s0[0]!.end], [0, 1], "F0 on stage 0 runs alone");
  assert.deepEqual([s0[1]!.start, s0[1]!.end], [1, 3], "F1 on stage 0 shares the machine with F0 on stage 1: half speed");
  assert.deepEqual([s1[0]!.start, s1[0]!.end], [1, 3]);
  // Work is conserved: every action still does its whole cost, and nothing ends before simulate()'s time.
  const free = simulate(gpipe(2, 2), unit);
  const end = (t: typeof free): number => Math.max(...t.flat().map((a) => a.end));
  assert.ok(end(both) > end(free), "overlapping actions take longer than alone");
  assert.ok(end(both) <= 2 * end(free), "at most as long as every action at half speed");
});

test("a hand-off frees its stage but holds the neighbour, and loads the machine while it runs", () => {
  const sends = (_s: number, a: { kind: "F" | "B" }) => ({ computeMs: unit(_s, a), sendMs: 1 });
  const free = simulateShared(gpipe(2, 2), sends, () => 1);
  assert.deepEqual(free[0]!.map((a) => [a.start, a.end]).slice(0, 2), [[0, 1], [1, 2]], "stage 0 computes F1 while F0 is handed on");
  assert.deepEqual([free[1]![0]!.start, free[1]![0]!.end], [2, 3], "stage 1 starts F0 once it has arrived");
  // With the machine shared by everything running, F1 on stage 0 runs beside F0's hand-off: two at once, each at half speed.
  const shared = simulateShared(gpipe(2, 2), sends, (busy) => busy);
  assert.ok(shared[0]![1]!.end > 2, "stage 0's F1 slows while the hand-off runs beside it");
});

test("a deadlocked schedule is reported as simulate() reports it", () => {
  const deadlock = {
    name: "1f1b" as const,
    stages: 2,
    microBatches: 1,
    actions: [[{ kind: "B" as const, micro: 0 }, { kind: "F" as const, micro: 0 }], [{ kind: "F" as const, micro: 0 }, { kind: "B" as const, micro: 0 }]],
  };
  assert.throws(() => simulateShared(deadlock, alone, () => 1), /deadlocks: stage 0 at B0, stage 1 at F0/);
});
