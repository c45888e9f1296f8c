import assert from "node:assert/strict";
import { test } from "node:test";
import { OverlapTrial, overlapTrialFor, slowerReplicaMs, TRIAL } from "../../sdk/strategies/data/overlap-trial";

const LAST = TRIAL.last;

/** Runs `steps` steps through a trial, two in flight as the step loop sends them: a step's flag is chosen before the one two back has ended. */
function drive(trial: OverlapTrial, steps: number, ms: (on: boolean, step: number) => number, start = 0, overlaps = true): boolean[] {
  const flags: boolean[] = [];
  const pending: Array<{ step: number; on: boolean }> = [];
  const end = (p: { step: number; on: boolean }) => trial.ended(p.step, ms(p.on, p.step), p.on && overlaps);
  for (let s = start; s < start + steps; s++) {
    const on = trial.flag(s);
    flags.push(on);
    pending.push({ step: s, on });
    if (pending.length === 2) end(pending.shift()!);
  }
  pending.forEach(end);
  return flags;
}

test("the trial alternates its steps after the warm-up and keeps buckets from the next step sent once they timed 3% faster", () => {
  assert.deepEqual(TRIAL, { first: 3, last: 18, each: 8, minSteps: 76, margin: 1.03 });
  const trial = OverlapTrial.of(0, 90);
  assert.ok(trial instanceof OverlapTrial);
  const flags = drive(trial, 90, (on) => (on ? 10 : 11));
  assert.deepEqual(flags.slice(0, 3), [false, false, false], "the warm-up steps as the rule chose");
  assert.deepEqual(flags.slice(3, LAST + 1), Array.from({ length: 16 }, (_, i) => i % 2 === 0));
  // The last trial step ends after the next was sent: that one keeps the rule's choice, the rest the kept one.
  assert.equal(flags[LAST + 1], false);
  assert.ok(flags.slice(LAST + 2).every((f) => f));
  assert.deepEqual(trial.record(), { kept: true, steps: [3, LAST], onMs: 10, offMs: 11, from: LAST + 2 });
});

test("a tie, or buckets under 3% faster, keeps one all-reduce after the backward pass; medians, so one slow step moves nothing", () => {
  const close = OverlapTrial.of(0, 90) as OverlapTrial;
  assert.ok(drive(close, 90, (on) => (on ? 9.8 : 10)).slice(LAST + 1).every((f) => !f));
  assert.equal(close.record()!.kept, false);
  const noisy = OverlapTrial.of(0, 90) as OverlapTrial;
  // Step 3 (buckets) stretched by another process: the median of the eight still says buckets.
  drive(noisy, 90, (on, s) => (s === 3 ? 80 : on ? 10 : 12));
  assert.deepEqual(noisy.record(), { kept: true, steps: [3, LAST], onMs: 10, offMs: 12, from: LAST + 2 });
});

test("a resumed fit's trial starts 3 steps into it; a fit too short, or a step that could not overlap, times nothing", () => {
  const resumed = OverlapTrial.of(100, 90) as OverlapTrial;
  const flags = drive(resumed, 90, (on) => (on ? 10 : 20), 100);
  assert.deepEqual(flags.slice(0, 4), [false, false, false, true]);
  assert.deepEqual(resumed.record(), { kept: true, steps: [103, 100 + LAST], onMs: 10, offMs: 20, from: 100 + LAST + 2 });
  assert.deepEqual(OverlapTrial.of(0, 75), { kept: false, skipped: "this fit's 75 step(s) are too few to time both ways (76 or more)" });
  const websocket = OverlapTrial.of(0, 90) as OverlapTrial;
  const sent = drive(websocket, 90, () => 10, 0, false);
  assert.ok(sent.slice(5).every((f) => !f), "after the first step that could not overlap, every step goes as the rule chose");
  assert.match(JSON.stringify(websocket.record()), /cannot overlap/);
  assert.equal(overlapTrialFor(false, true, 0, 90), null, "a plan that chose (a core to spare, or asked) runs no trial");
  assert.equal(overlapTrialFor(true, false, 0, 90), null, "autodiff hands over the whole gradient at once: nothing to time");
});

test("a step's time is its slower replica's, waiting for the other included", () => {
  const reply = (computeMs: number, commMs: number, waitMs: number, applyMs: number) => ({ msg: { computeMs, commMs, waitMs, applyMs } });
  assert.equal(slowerReplicaMs([reply(4, 1, 2, 0.5), reply(6, 1, 0, 0.5)]), 7.5);
});
