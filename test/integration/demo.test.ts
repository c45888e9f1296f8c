import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { ROOT } from "../helpers/readme";

test("the main job: `npm run demo`, as the README has it, trains MNIST on local workers to >= 90% held-out accuracy", () => {
  const r = spawnSync("npm", ["run", "demo"], { cwd: ROOT, encoding: "utf8", timeout: 15 * 60_000 });
  const out = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, out);
  const m = /held-out accuracy: ([\d.]+)% on (\d+) digits/.exec(r.stdout);
  assert.ok(m, out);
  assert.ok(Number(m[1]) >= 90, out);
  assert.ok(Number(m[2]) > 1500);
  assert.match(r.stdout, /throughput \d+ samples\/s/);
  // The plan's memory estimate holds for a real fit fed by the driver: 1.05-1.31x on this machine,
  // 3.5-4x while each step's batch came in new arrays (docs/native-step.md).
  const measured = [...r.stdout.matchAll(/rank \d memory: .* the plan estimated [\d.]+ MiB \(measured ([\d.]+)x/g)].map((x) => Number(x[1]));
  assert.equal(measured.length, 2, out);
  for (const ratio of measured) assert.ok(ratio <= 1.5, `a worker held ${ratio}x the plan's estimate\n${out}`);
  // One run, one prediction: the plan shown first is the one the fit ran (timed before it was shown).
  const predictions = new Set([...r.stdout.matchAll(/predicted:? ([\d.]+ ms per step, \d+|\d+) samples\/s/g)].map((x) => /(\d+)$/.exec(x[1]!)![1]));
  assert.equal(predictions.size, 1, `predictions ${[...predictions].join(", ")}\n${out}`);
});
