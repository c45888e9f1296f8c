import assert from "node:assert/strict";
import { test } from "node:test";
import { bubbleFraction, checkSchedule, formatSchedule, gpipe, makeSchedule, maxInFlight, oneFOneB, simulate, theoreticalBubble, type Schedule } from "../../sdk/plan/schedules";

const shapes: Array<[number, number]> = [
  [1, 1], [2, 1], [2, 4], [3, 5], [4, 1], [4, 4], [4, 8], [5, 3],
];

test("both schedules run every forward and backward once per micro-batch, F before B, without deadlock", () => {
  for (const [S, M] of shapes) {
    for (const s of [gpipe(S, M), oneFOneB(S, M)]) {
      assert.deepEqual(checkSchedule(s), [], `${s.name} S=${S} M=${M}`);
      assert.equal(s.actions.length, S);
      for (const acts of s.actions) assert.equal(acts.length, 2 * M);
    }
  }
});

test("a broken schedule is reported, not run", () => {
  const swapped: Schedule = { name: "gpipe", stages: 1, microBatches: 1, actions: [[{ kind: "B", micro: 0 }, { kind: "F", micro: 0 }]] };
  assert.match(checkSchedule(swapped).join(), /B0 before F0/);
  const missing: Schedule = { name: "gpipe", stages: 1, microBatches: 2, actions: [[{ kind: "F", micro: 0 }, { kind: "B", micro: 0 }]] };
  assert.match(checkSchedule(missing).join(), /runs F for micro-batches \[0\]/);
  // Stage 0 waits for B0 from stage 1, which waits for F1 that stage 0 never sends first.
  const deadlock: Schedule = {
    name: "1f1b",
    stages: 2,
    microBatches: 2,
    actions: [
      [{ kind: "F", micro: 0 }, { kind: "B", micro: 0 }, { kind: "F", micro: 1 }, { kind: "B", micro: 1 }],
      [{ kind: "F", micro: 1 }, { kind: "F", micro: 0 }, { kind: "B", micro: 0 }, { kind: "B", micro: 1 }],
    ],
  };
  assert.match(checkSchedule(deadlock).join(), /deadlocks/);
});

test("GPipe holds all M micro-batches in flight on every stage; 1F1B at most S - s", () => {
  for (const [S, M] of shapes) {
    for (let s = 0; s < S; s++) {
      assert.equal(maxInFlight(gpipe(S, M), s), M);
      assert.equal(maxInFlight(oneFOneB(S, M), s), Math.min(M, S - s), `1f1b S=${S} M=${M} stage ${s}`);
    }
  }
});

test("the simulated bubble of both schedules equals (S-1)/(M+S-1) with equal stages", () => {
  for (const [S, M] of shapes) {
    for (const name of ["gpipe", "1f1b"] as const) {
      const b = bubbleFraction(simulate(makeSchedule(name, S, M)));
      assert.ok(Math.abs(b - theoreticalBubble(S, M)) < 1e-12, `${name} S=${S} M=${M}: ${b} vs ${theoreticalBubble(S, M)}`);
    }
  }
  assert.equal(theoreticalBubble(4, 1), 0.75);
  assert.equal(theoreticalBubble(2, 1), 0.5);
});

test("a slow stage sets the pace: the simulation follows the cost it is given", () => {
  const timed = simulate(gpipe(2, 2), (s, a) => (s === 1 ? 3 : 1) * (a.kind === "F" ? 1 : 2));
  const end = Math.max(...timed.flat().map((a) => a.end));
  // Stage 1: F0 at 1..4, F1 at 4..7, B0 7..13, B1 13..19; stage 0's B1 then 19..21.
  assert.equal(end, 21);
});

test("a schedule prints as a stage x time grid", () => {
  const text = formatSchedule(gpipe(2, 2));
  assert.equal(
    text,
    ["gpipe: 2 stages, 2 micro-batches (F = 1 unit, B = 2)", "stage 0 | F0 F1 .  .  .  B0 b  B1 b  ", "stage 1 | .  F0 F1 B0 b  B1 b  .  .  "].join("\n"),
  );
  assert.match(formatSchedule(oneFOneB(2, 3)), /stage 0 \| F0 F1 \.  \.  B0 b  F2/);
});
