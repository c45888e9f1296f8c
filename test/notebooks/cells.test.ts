import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, test } from "node:test";
import { CLI } from "../helpers/processes";
import { ensureDebianPackages, jupyterReady, PYTHON } from "../helpers/system-deps";

/**
 * A notebook that never surprises, through real kernels: cells after a failure run (meshtrain's
 * kernel honours stop_on_error; stock tslab's aborts are caught by the notebook runner and the
 * export), a plan draws itself with nothing imported, re-running a launch cell replaces its
 * cluster, and a failing or interrupted cell shows an error output with meshtrain's message and
 * hint, never a stack of tslab's or a raw dump.
 */

const ROOT = path.join(__dirname, "..", "..", "..");

before(() => {
  ensureDebianPackages("Jupyter (nbclient, nbconvert)", ["jupyter-client", "jupyter-nbconvert", "python3-nbclient", "python3-ipykernel"], jupyterReady);
});

interface ErrorContent {
  ename: string;
  evalue: string;
  traceback: string[];
}
interface Cell {
  stdout: string;
  stderr: string;
  errors: ErrorContent[];
  displays: string[][];
  /** Each display message's kind and display id. */
  shown: Array<[string, string | null]>;
  reply: { status: string; ename?: string; evalue?: string; traceback?: string[] };
}
type Phase =
  | { phase: "after a failure, not stopping"; raised: Cell; after: Cell }
  | { phase: "after a failure, stopping"; raised: Cell; after: Cell }
  | { phase: "drawn without an import"; cell: Cell }
  | { phase: "meshtrain error"; cell: Cell }
  | { phase: "late failure"; cell: Cell }
  | { phase: "re-run three times"; live: number[]; stderr: string[]; alive: boolean[][] }
  | { phase: "kept and named"; live: number[]; again: Cell; listed: Cell; alive: boolean[] }
  | { phase: "interrupted"; cell: Cell; read: Cell }
  | { phase: "a second fit meanwhile"; started: Cell; second: Cell };

/** No Node or tslab stack, and no raw dump of an error's fields, anywhere in what a cell showed. */
function clean(cell: Cell, what: string): void {
  const shown = [cell.stderr, ...cell.errors.flatMap((e) => e.traceback)].join("\n");
  assert.doesNotMatch(shown, /^\s+at .*(tslab|node:internal)/m, `${what}: a stack frame of tslab or Node`);
  assert.doesNotMatch(shown, /code: 'MT_ERR|retryable: false|\[cause\]/, `${what}: a raw error dump`);
}

test("in meshtrain's kernel: cells after a failure run, plans draw unimported, re-runs replace, errors and interrupts read clearly", { timeout: 8 * 60_000 }, () => {
  const r = spawnSync(PYTHON, [path.join(ROOT, "test", "notebooks", "cells_session.py"), path.join(ROOT, "notebooks")], {
    encoding: "utf8",
    env: { ...process.env, JUPYTER_PATH: path.join(ROOT, "jupyter") },
    timeout: 7 * 60_000,
  });
  assert.equal(r.status, 0, `kernel session failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  const phases = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Phase);
  const get = <P extends Phase["phase"]>(name: P): Extract<Phase, { phase: P }> => {
    const p = phases.find((x): x is Extract<Phase, { phase: P }> => x.phase === name);
    assert.ok(p, `no phase "${name}" in:\n${r.stdout}`);
    return p;
  };

  // stop_on_error=false (nbclient for a raises-exception cell, allow_errors): the next cell runs.
  const lenient = get("after a failure, not stopping");
  assert.equal(lenient.raised.reply.status, "error");
  assert.equal(lenient.raised.reply.ename, "Error");
  assert.deepEqual([lenient.after.reply.status, lenient.after.stdout], ["ok", "the next cell ran\n"]);
  // The default (stop_on_error=true) stops the queue, as ipykernel does.
  const strict = get("after a failure, stopping");
  assert.equal(strict.after.reply.status, "abort");

  const drawn = get("drawn without an import").cell;
  assert.equal(drawn.reply.status, "ok");
  assert.ok(drawn.displays.some((types) => types.includes("image/svg+xml")), `the plan drew itself: ${JSON.stringify(drawn.displays)}`);
  // tslab prints a cell's value with console.log: a drawn value left an empty stdout output under it.
  assert.equal(drawn.stdout, "", "nothing printed under the drawn plan");

  const failed = get("meshtrain error").cell;
  assert.equal(failed.errors.length, 1, "one error output");
  const e = failed.errors[0]!;
  assert.equal(e.ename, "ConfigError");
  assert.match(e.traceback[0]!, /ConfigError.* \[MT_ERR_CONFIG\]: pipeline: stages\(5\) != workers\(2\)/);
  assert.ok(e.traceback.some((l) => /^help: use 2 stages/.test(l)), e.traceback.join("\n"));
  assert.deepEqual([failed.reply.ename, failed.reply.evalue], [e.ename, e.evalue], "the reply says what the output says");
  assert.equal(failed.stderr, "", "nothing dumped on stderr");
  clean(failed, "a meshtrain error");

  // A rejection no cell awaited: an error output in the cell that runs when it happens, which itself succeeds.
  const late = get("late failure").cell;
  assert.deepEqual([late.reply.status, late.stdout], ["ok", "waited\n"]);
  assert.deepEqual(late.errors.map((x) => x.ename), ["ConfigError"]);
  assert.match(late.errors[0]!.traceback.join("\n"), /late failure\n\(from a promise no cell awaited[^\n]*\nhelp: await the promises you start/);
  clean(late, "a late failure");

  const reruns = get("re-run three times");
  assert.deepEqual(reruns.live, [1, 1, 1], "each re-run leaves one cluster");
  assert.doesNotMatch(reruns.stderr[0]!, /ran before/);
  for (const said of reruns.stderr.slice(1)) assert.match(said, /this cell ran before and launched 2 worker\(s\), strategy "data", .*: closing it first \(launch\(\{ keep: true \}\)/);
  assert.deepEqual(reruns.alive, [[false, false], [false, false], [true, true]], "only the last run's workers are left");

  const kept = get("kept and named");
  assert.deepEqual(kept.live, [2, 3, 4], "kept and named clusters stay beside the cell's");
  assert.equal(kept.again.errors[0]?.ename, "ConfigError");
  assert.match(kept.again.errors[0]?.evalue ?? "", /a cluster named "big" is still running/);
  const [listed, closed] = kept.listed.stdout.trim().split("\n").map((l) => JSON.parse(l) as { names?: Array<string | null>; first?: string; live?: number });
  assert.deepEqual(listed?.names, [null, null, null, "big"]);
  assert.match(listed?.first ?? "", /\S/, "a cluster prints as something readable");
  assert.equal(closed?.live, 0, "close() on each listed cluster closed it");
  assert.ok(kept.alive.every((a) => !a), "every worker exited");

  // A fit's live plot is shown by the cell that called fit(); later drawings only update it by
  // its id, so a cell running meanwhile (here a second fit, refused) shows no plot of its own.
  const meanwhile = get("a second fit meanwhile");
  const plots = meanwhile.started.shown.filter(([kind]) => kind === "display_data");
  assert.equal(plots.length, 1, `the cell that called fit() shows its plot: ${JSON.stringify(meanwhile.started.shown)}`);
  const id = plots[0]![1];
  assert.ok(id, "with a display id");
  assert.equal(meanwhile.second.stdout.trim(), "StateError");
  assert.ok(
    meanwhile.second.shown.every(([kind, shownId]) => kind === "update_display_data" && shownId === id),
    `the cell running meanwhile only updates the first cell's plot: ${JSON.stringify(meanwhile.second.shown)}`,
  );

  const interrupted = get("interrupted");
  assert.equal(interrupted.cell.reply.status, "error");
  assert.match(interrupted.cell.stderr, /meshtrain: interrupted: stopping the fit after the step in flight; interrupt again within 2 s/);
  assert.deepEqual(interrupted.cell.errors.map((x) => x.ename), ["Interrupted"]);
  assert.equal(interrupted.cell.errors[0]!.traceback.length, 1, "one line, no stack");
  clean(interrupted.cell, "an interrupt");
  // The fit kept in a cell that finished is read in the next: its AbortError holds the run.
  const read = JSON.parse(interrupted.read.stdout.trim().split("\n")[0]!) as { name: string; steps: number };
  assert.equal(read.name, "AbortError");
  assert.ok(read.steps > 0, `steps before the interrupt: ${read.steps}`);
});

function notebook(cells: Array<{ source: string; tags?: string[] }>): string {
  return JSON.stringify({
    cells: cells.map((c, i) => ({ cell_type: "code", id: `cell-${i}`, execution_count: null, metadata: c.tags ? { tags: c.tags } : {}, outputs: [], source: c.source })),
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5,
  });
}

test("the notebook runner and the export fail on a cell that errs untagged or was aborted, and run on past a raises-exception cell", { timeout: 6 * 60_000 }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-cells-"));
  try {
    // Stock tslab (no meshtrain kernel) aborts the cell sent right after a failed one.
    const stock = path.join(tmp, "kernels", "stock-tslab");
    fs.mkdirSync(stock, { recursive: true });
    const tslab = path.join(ROOT, "node_modules", "tslab", "bin", "tslab");
    fs.writeFileSync(path.join(stock, "kernel.json"), JSON.stringify({ argv: [process.execPath, tslab, "kernel", "--config-path", "{connection_file}"], display_name: "stock tslab", language: "typescript" }));
    const env = { ...process.env, JUPYTER_PATH: [tmp, path.join(ROOT, "jupyter")].join(path.delimiter) };
    const raisesThenRuns = notebook([{ source: 'throw new Error("shown on purpose");', tags: ["raises-exception"] }, { source: 'console.log("the cell after it ran");' }]);
    const failsUntagged = notebook([{ source: 'console.log("first");' }, { source: 'throw new Error("not expected");' }, { source: 'console.log("never");' }]);
    fs.writeFileSync(path.join(tmp, "raises.ipynb"), raisesThenRuns);
    fs.writeFileSync(path.join(tmp, "fails.ipynb"), failsUntagged);
    const runner = (kernel: string, file: string): ReturnType<typeof spawnSync> =>
      spawnSync(PYTHON, [path.join(ROOT, "scripts", "notebooks.py"), "--out", path.join(tmp, "out"), "--plotly", require.resolve("plotly.js-dist-min/plotly.min.js"), "--timeout", "120", "--kernel", kernel, path.join(tmp, file)], { encoding: "utf8", env, timeout: 150_000 });

    const ours = runner("meshtrain-tslab", "raises.ipynb");
    assert.equal(ours.status, 0, `meshtrain's kernel ran past the raises-exception cell:\n${ours.stdout}\n${ours.stderr}`);
    const executed = JSON.parse(fs.readFileSync(path.join(tmp, "out", "raises.ipynb"), "utf8")) as { cells: Array<{ outputs: Array<{ output_type: string; text?: string | string[]; ename?: string }> }> };
    assert.equal(executed.cells[0]!.outputs.find((o) => o.output_type === "error")?.ename, "Error");
    assert.equal([executed.cells[1]!.outputs.find((o) => o.output_type === "stream")?.text ?? []].flat().join(""), "the cell after it ran\n");

    const aborted = runner("stock-tslab", "raises.ipynb");
    assert.equal(aborted.status, 1, `stock tslab's abort fails the run:\n${aborted.stdout}`);
    assert.match(String(aborted.stdout), /cell 2 did not run: the kernel answered its request with status "abort"/);

    const untagged = runner("meshtrain-tslab", "fails.ipynb");
    assert.equal(untagged.status, 1);
    assert.match(String(untagged.stdout), /cell 2 failed:[\s\S]*not expected/);

    // meshtrain export --execute: the page is written either way; the exit status says whether every cell ran.
    const exported = spawnSync(process.execPath, [CLI, "export", path.join(tmp, "fails.ipynb"), "--execute", "--timeout", "120"], { encoding: "utf8", env, timeout: 150_000 });
    assert.equal(exported.status, 1, exported.stderr);
    assert.match(exported.stderr, /a cell of .*fails\.ipynb failed or did not run/);
    assert.match(fs.readFileSync(path.join(tmp, "fails.html"), "utf8"), /not expected/);
    // The executed notebook beside the page, with the outputs the page shows, the source untouched.
    assert.match(exported.stdout, /fails\.nbconvert\.ipynb/);
    const outputs = (file: string) => (JSON.parse(fs.readFileSync(path.join(tmp, file), "utf8")) as { cells: Array<{ outputs?: unknown[] }> }).cells.map((c) => JSON.stringify(c.outputs ?? []));
    assert.match(outputs("fails.nbconvert.ipynb")[1]!, /not expected/);
    assert.ok(outputs("fails.ipynb").every((o) => o === "[]"), "the notebook itself is left as it was");
    const abortedExport = spawnSync(process.execPath, [CLI, "export", path.join(tmp, "raises.ipynb"), "--execute", "--kernel", "stock-tslab", "--timeout", "120"], { encoding: "utf8", env, timeout: 150_000 });
    assert.equal(abortedExport.status, 1, `an aborted cell fails the export:\n${abortedExport.stderr}`);
    assert.match(fs.readFileSync(path.join(tmp, "raises.html"), "utf8"), /did not run: the kernel answered its request with status/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
