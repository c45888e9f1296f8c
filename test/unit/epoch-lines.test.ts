import assert from "node:assert/strict";
import { test } from "node:test";
import { EpochLines } from "../../sdk/viz/epoch-lines";
import type { StepRecord } from "../../sdk/metrics/records";

const step = (s: number, epoch: number, samples: number, loss: number, acc: number, endMs: number): StepRecord =>
  ({ step: s, epoch, samples, ms: 10, endMs, loss, metrics: { acc }, workers: [], straggler: 0 }) as unknown as StepRecord;

test("verbose 2: one line per epoch, the means weighted by samples; with validation the line waits for it", () => {
  const out: string[] = [];
  const plain = new EpochLines(2, false, (l) => void out.push(l));
  plain.step(step(0, 0, 8, 1.0, 0.5, 10));
  plain.step(step(1, 0, 4, 0.4, 1.0, 20));
  plain.step(step(2, 1, 8, 0.2, 0.25, 30));
  plain.end();
  assert.deepEqual(out, ["Epoch 1 / 2: 20 ms, loss=0.8000 acc=0.6667\n", "Epoch 2 / 2: 10 ms, loss=0.2000 acc=0.2500\n"]);
  out.length = 0;
  const validating = new EpochLines(1, true, (l) => void out.push(l));
  validating.step(step(0, 0, 8, 1.0, 0.5, 10));
  assert.deepEqual(out, []);
  validating.validated(0, { val_loss: 0.5 });
  validating.end();
  assert.deepEqual(out, ["Epoch 1 / 1: 10 ms, loss=1.0000 acc=0.5000 val_loss=0.5000\n"]);
});
