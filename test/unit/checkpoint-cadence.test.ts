import assert from "node:assert/strict";
import { test } from "node:test";
import { AUTO_FIRST, AUTO_SHARE, Cadence } from "../../sdk/driver/checkpoint/cadence";

test("a fixed interval keeps the multiples of every, none at the loop's start; a loop begun again counts from there", () => {
  const c = new Cadence(4);
  c.begin(0);
  assert.deepEqual([0, 1, 3, 4, 5, 8, 12].filter((s) => c.due(s)), [4, 8, 12]);
  c.begin(8);
  assert.deepEqual([8, 9, 12].filter((s) => c.due(s)), [12]);
  c.saved(12, 500, [1, 1, 1]);
  assert.equal(c.chosen, null, "a fixed interval is never chosen");
});

test('"auto": the first after AUTO_FIRST steps, then the fewest steps that keep writing within AUTO_SHARE of the time', () => {
  const c = new Cadence("auto");
  c.begin(0);
  assert.ok(!c.due(AUTO_FIRST - 1) && c.due(AUTO_FIRST));
  // 40 ms to write against 20 ms a step (the median of the recent steps): 40 / (0.05 x 20) = 40 steps.
  c.saved(AUTO_FIRST, 40, [20, 19, 500, 21]);
  assert.deepEqual(c.chosen, { every: 40, saveMs: 40, stepMs: 20.5 });
  assert.ok(40 * AUTO_SHARE * 20.5 >= 40, "the chosen interval keeps the writes within the share");
  assert.ok(!c.due(AUTO_FIRST + 39) && c.due(AUTO_FIRST + 40));
  // A loop run again after a loss keeps the interval and counts from where it begins.
  c.begin(10);
  assert.ok(!c.due(49) && c.due(50));
  c.saved(50, 4000, [20]);
  assert.equal(c.chosen!.every, 40, "chosen once");
  // A write cheaper than a step: every step.
  const cheap = new Cadence("auto");
  cheap.begin(0);
  cheap.saved(AUTO_FIRST, 0.5, [100]);
  assert.equal(cheap.chosen!.every, 1);
});
