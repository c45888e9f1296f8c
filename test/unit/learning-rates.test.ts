import assert from "node:assert/strict";
import { test } from "node:test";
import { checkSchedule, learningRates, rateAt } from "../../sdk/driver/learning-rates";
import { ConfigError } from "../../sdk/errors/errors";

test("warmupCosine: linear warm-up to the base rate, a cosine down to the floor at totalSteps, held after", () => {
  const s = learningRates.warmupCosine({ warmupSteps: 4, totalSteps: 12, floor: 0.1 });
  const at = (step: number) => s(step, 0, 2);
  assert.deepEqual([0, 1, 2, 3].map(at), [0.5, 1, 1.5, 2]);
  assert.equal(at(4), 2);
  assert.ok(Math.abs(at(8) - 2 * (0.1 + 0.9 * 0.5)) < 1e-12, "half-way down: the mean of base and floor");
  assert.ok(Math.abs(at(12) - 0.2) < 1e-12);
  assert.ok(Math.abs(at(100) - 0.2) < 1e-12);
  assert.throws(() => learningRates.warmupCosine({ warmupSteps: 5, totalSteps: 5 }), ConfigError);
});

test("stepDecay: the base rate times factor once per `every` steps", () => {
  const s = learningRates.stepDecay({ every: 3, factor: 0.5 });
  assert.deepEqual([0, 2, 3, 5, 6, 9].map((step) => s(step, 0, 1)), [1, 1, 0.5, 0.5, 0.25, 0.125]);
  assert.throws(() => learningRates.stepDecay({ every: 0, factor: 0.5 }), ConfigError);
  assert.throws(() => learningRates.stepDecay({ every: 2, factor: 1.5 }), ConfigError);
});

test("a rate that is not a finite positive number is refused, naming the step; checkSchedule asks every step of the fit", () => {
  assert.throws(() => rateAt(() => 0, 7, 1, 0.1), (e: unknown) => e instanceof ConfigError && /gave 0 for step 7 \(epoch 1\)/.test(e.message));
  const asked: number[] = [];
  const o = { optimizer: { learningRate: 0.1 }, epochs: 3, batchSize: 4, shuffle: false, seed: 0, initialEpoch: 1 };
  checkSchedule({ ...o, schedule: (step) => (asked.push(step), 0.1) }, 10);
  assert.deepEqual(asked, [3, 4, 5, 6, 7, 8], "epochs 1 and 2 of three steps each");
  assert.throws(() => checkSchedule({ ...o, schedule: (step) => (step === 8 ? Infinity : 0.1) }, 10), /gave Infinity for step 8 \(epoch 2\)/);
});
