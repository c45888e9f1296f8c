import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.join(__dirname, "..", "..", "..");
/** Where --quick writes: beside the real results, never over them. */
export const QUICK_RESULTS = path.join(ROOT, "bench", "results", "quick");

/**
 * `npm run bench -- --quick --only <parts>`: the benchmarks run end to end and write their
 * results (never timed here). The limit is far above what this takes on a quiet machine: on a
 * swamped one (every process 3-6x slower) all the benches took 23.5 minutes.
 */
export function runBenches(parts: readonly string[]): void {
  const r = spawnSync(process.execPath, [path.join(ROOT, "dist", "bench", "run-all.js"), "--quick", "--only", parts.join(",")], { encoding: "utf8", timeout: 30 * 60_000 });
  // Only the end: CI keeps a part of a long log, and the whole of both streams pushed the cause out of it.
  const tail = (t: string): string => (t.length > 3000 ? `...${t.slice(-3000)}` : t);
  assert.equal(r.status, 0, `${r.error ? `${r.error.message}\n` : ""}stdout:\n${tail(r.stdout)}\nstderr:\n${tail(r.stderr)}`);
  for (const part of parts) {
    const data = JSON.parse(fs.readFileSync(path.join(QUICK_RESULTS, `${part}.json`), "utf8")) as { rows: unknown[]; machine: { cores: number }; missing?: string };
    if (data.missing === undefined) assert.ok(data.rows.length > 0, part);
    assert.ok(data.machine.cores > 0);
    assert.match(fs.readFileSync(path.join(QUICK_RESULTS, `${part}.md`), "utf8"), /^### /);
  }
}

/** One part's results as --quick wrote them. */
export function quickResults<T>(part: string): T {
  return JSON.parse(fs.readFileSync(path.join(QUICK_RESULTS, `${part}.json`), "utf8")) as T;
}
