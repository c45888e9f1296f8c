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
});
