import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { cluster } from "../../sdk/index";
import { allDocsText, blocksRun, scratchDir, where, writeScript } from "../helpers/readme";
import { runInGroup } from "../helpers/run-block";

/**
 * The README's programs, run as written: each TypeScript block a user would paste into a script
 * (`import ... from "meshtrain"`, top-level await) runs with node in its own folder of this
 * repository, exits 0, prints what its comments promise and leaves no worker process behind.
 * Then the Cluster's documented fields are checked against a real cluster.
 */

/** What a block's output must show, beyond exiting 0, by a string the block contains. */
const EXPECT: ReadonlyArray<{ contains: string; output: RegExp[]; files?: string[] }> = [
  { contains: 'cluster().workers(3).strategy("data").launch()', output: [/ring/i, /throughput \d+ samples\/s/], files: ["run.html"] },
  { contains: "elastic: { minWorkers: 2 }", output: [/WorkerLostError: worker rank 1 \(.*\) exited \(killed by SIGKILL\) at step/, /^20$/m], files: ["ckpt/latest"] },
];

for (const block of blocksRun("script")) {
  const first = block.code.split("\n").find((l) => l.includes("launch()")) ?? block.code.split("\n")[0]!;
  test(`${where(block)} runs as written: ${first.trim().slice(0, 90)}`, { timeout: 6 * 60_000 }, async (t) => {
    const dir = scratchDir(`block-${block.file.replace(/[/.]/g, "-")}-${block.line}`);
    const { script } = writeScript(block, dir);
    const r = await runInGroup(process.execPath, [script], { cwd: dir, timeoutMs: 5 * 60_000 });
    t.diagnostic(r.out.split("\n").filter((l) => l && !l.includes("█") && !l.includes("░")).slice(-6).join(" | "));
    assert.equal(r.code, 0, `${where(block)} exited ${r.code ?? r.signal}:\n${r.out}`);
    assert.equal(r.leftBehind, false, "a worker process outlived the script");
    const expect = EXPECT.find((e) => block.code.includes(e.contains));
    for (const re of expect?.output ?? []) assert.match(r.out, re);
    for (const f of expect?.files ?? []) assert.ok(fs.existsSync(path.join(dir, f)), `${f} was written`);
    fs.rmSync(dir, { recursive: true, force: true });
  });
}

/** The names a README paragraph gives in backticks, as `name` or `name(...)`. */
function documentedNames(paragraph: string): string[] {
  return [...paragraph.matchAll(/`(\w+)(?:\([^`]*\))?`/g)].map((m) => m[1]!);
}

test("the Cluster has the fields and methods the README documents, and workers[i] the documented shape", async () => {
  const text = allDocsText();
  const start = text.indexOf("`Cluster` has ");
  assert.ok(start > 0, "the guides' Cluster paragraph");
  const paragraph = text.slice(start, text.indexOf("\n\n", start));
  // Named, so that every documented field has a value.
  const c = await cluster().workers(2).strategy("data").launch({ name: "documented" });
  try {
    const own = c as unknown as Record<string, unknown>;
    const top = paragraph.replace(/\([^()]*(\([^()]*\)[^()]*)*\)/g, "");
    const names = documentedNames(top).filter((n) => n !== "Cluster");
    assert.deepEqual(names, ["fit", "profile", "plan", "close", "kill", "workers", "parameterServers", "idleSpares", "notes", "logs", "name", "state"]);
    for (const n of names) assert.notEqual(own[n], undefined, `Cluster.${n}`);

    const shape = /`\{ ([\w, ]+) \}`/.exec(paragraph)![1]!.split(", ");
    assert.deepEqual(Object.keys(c.workers[0]!).sort(), [...shape].sort(), "workers[i]'s keys");
    const infoList = /`info` as the worker reported it when it joined:\s+([^)]*)\.\.\./.exec(paragraph)![1]!;
    const info = c.workers[0]!.info as unknown as Record<string, unknown>;
    for (const n of documentedNames(infoList)) assert.notEqual(info[n], undefined, `workers[0].info.${n}`);
    const states = documentedNames(/`state` \(([^)]*)\)/.exec(paragraph)![1]!);
    assert.ok(states.includes(c.state), `state ${c.state} is one of ${states.join(", ")}`);
    assert.ok(Array.isArray(c.parameterServers) && Array.isArray(c.notes) && Array.isArray(c.logs));
  } finally {
    await c.close();
  }
  assert.equal(c.state, "closed");
});
