import assert from "node:assert/strict";
import * as fs from "node:fs";
import { test } from "node:test";
import { cluster } from "../../sdk/index";
import { allDocsText, BLOCK_RUNS, blockRun, readmeBlocks, scratchDir, typeErrors, where, writeScript } from "../helpers/readme";

/**
 * The README's code as a user copies it: every fenced block is run by some test (or listed with
 * the reason it is not), its TypeScript compiles against the SDK's published types, and the
 * builder methods its table documents exist. readme-blocks.test.ts and readme-hosts.test.ts run
 * the programs.
 */

test("every code block of the README and the guides is placed: run by a test, an output sample, or listed with why not", () => {
  const blocks = readmeBlocks();
  assert.ok(blocks.length >= 10, `found ${blocks.length} blocks`);
  for (const b of blocks) blockRun(b);
  for (const e of BLOCK_RUNS) assert.ok(blocks.some((b) => b.code.includes(e.contains)), `BLOCK_RUNS names a block that is gone: ${e.contains}`);
  for (const b of blocks) {
    const run = blockRun(b);
    if (run === "script" || (run === "hosts" && b.lang === "ts")) assert.equal(b.lang, "ts", where(b));
    if (run === "output") assert.equal(b.lang, "text", `${where(b)}: output samples are fenced as text`);
  }
});

test("every TypeScript block of the README and the guides type-checks as a strict ES module against meshtrain's published types", () => {
  const dir = scratchDir("typecheck");
  const ts = readmeBlocks().filter((b) => b.lang === "ts");
  assert.ok(ts.length >= 6);
  const errors = typeErrors(ts.map((b) => writeScript(b, dir).source));
  fs.rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(errors, []);
});

test("the builder methods the guides' table documents exist on cluster()", () => {
  const rows = allDocsText().match(/^\| `\.(\w+)\(/gm) ?? [];
  const names = rows.map((r) => /`\.(\w+)\(/.exec(r)![1]!);
  assert.ok(names.length >= 15, `rows: ${names.join(", ")}`);
  const builder = cluster() as unknown as Record<string, unknown>;
  const missing = names.filter((n) => typeof builder[n] !== "function");
  assert.deepEqual(missing, [], "documented builder methods that do not exist");
});
