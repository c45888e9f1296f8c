import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { before, test } from "node:test";
import { ensureDebianPackages, jupyterReady, PYTHON } from "../helpers/system-deps";

/**
 * The notebook's interrupt button, restart and shutdown, through a real tslab kernel driven by
 * jupyter_client (test/notebooks/kernel_session.py): an interrupt stops the fit at a step
 * boundary and rejects it with AbortError carrying the steps run, the cluster and its workers
 * stay and train the next fit, three times over; two interrupts within 2 s close the cluster;
 * a restart or a shutdown with a cluster running leaves no worker process.
 */

const ROOT = path.join(__dirname, "..", "..", "..");

interface Outcome {
  name: string;
  code?: string;
  steps?: number;
  message?: string;
}
interface After {
  outcome: Outcome;
  state: string;
  stepsSeen: [number, number];
  live: number;
}
type Phase =
  | { phase: "launched"; pids: number[]; live: number }
  | { phase: "interrupted"; n: number; cell: { stderr: string; status: string }; after: After; alive: boolean[]; kernel: boolean }
  | { phase: "fit after interrupts"; steps: number; state: string; alive: boolean[] }
  | { phase: "interrupted twice"; cell: { stderr: string; status: string }; after: After; alive: boolean[]; kernel: boolean }
  | { phase: "restart"; alive: boolean[]; kernel: boolean }
  | { phase: "shutdown"; alive: boolean[]; kernel: boolean }
  | { phase: "after restart"; two: number };

before(() => {
  ensureDebianPackages("Jupyter (jupyter_client)", ["jupyter-client", "python3-ipykernel"], jupyterReady);
});

/** The fit stopped on the interrupt: AbortError with the steps it ran, and no step after it. */
function checkAborted(after: After, what: string): void {
  assert.equal(after.outcome.name, "AbortError", `${what}: ${JSON.stringify(after.outcome)}`);
  assert.equal(after.outcome.code, "MT_ERR_ABORTED");
  assert.match(after.outcome.message ?? "", /fit interrupted \(SIGINT: Ctrl-C or the notebook's interrupt\)/);
  assert.ok((after.outcome.steps ?? 0) > 0, `${what}: trained before the interrupt`);
  // onStep saw exactly the steps the run records, and none in the 3 s after the fit rejected.
  assert.deepEqual(after.stepsSeen, [after.outcome.steps, after.outcome.steps], what);
}

test("interrupt, re-run, restart and shut down a real kernel: fits stop, clusters stay until closed, no worker outlives its kernel", { timeout: 10 * 60_000 }, () => {
  const r = spawnSync(PYTHON, [path.join(ROOT, "test", "notebooks", "kernel_session.py"), path.join(ROOT, "notebooks")], {
    encoding: "utf8",
    env: { ...process.env, JUPYTER_PATH: path.join(ROOT, "jupyter") },
    timeout: 9 * 60_000,
  });
  const phases = r.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Phase);
  assert.equal(r.status, 0, `kernel session failed:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
  const get = <P extends Phase["phase"]>(name: P): Array<Extract<Phase, { phase: P }>> => phases.filter((p): p is Extract<Phase, { phase: P }> => p.phase === name);

  const [launched] = get("launched");
  assert.equal(launched?.pids.length, 2);
  const interrupted = get("interrupted");
  assert.equal(interrupted.length, 3);
  for (const p of interrupted) {
    assert.equal(p.cell.status, "error", "the interrupted cell ends at once");
    assert.match(p.cell.stderr, /meshtrain: interrupted: stopping the fit after the step in flight/);
    checkAborted(p.after, `interrupt ${p.n}`);
    assert.equal(p.after.state, "ready");
    assert.equal(p.after.live, 1);
    assert.deepEqual(p.alive, [true, true], `interrupt ${p.n}: the workers ignore the process group's SIGINT`);
    assert.ok(p.kernel, `interrupt ${p.n}: the kernel survives`);
  }
  const [again] = get("fit after interrupts");
  assert.deepEqual(again && { steps: again.steps, state: again.state, alive: again.alive }, { steps: 8, state: "ready", alive: [true, true] });

  const [twice] = get("interrupted twice");
  assert.ok(twice, "no double interrupt phase");
  assert.match(twice.cell.stderr, /stopping the fit/);
  checkAborted(twice.after, "double interrupt");
  assert.equal(twice.after.state, "closed");
  assert.equal(twice.after.live, 0);
  assert.deepEqual(twice.alive, [false, false], "the second interrupt closed the cluster: its workers exited");
  assert.ok(twice.kernel, "the kernel survives a double interrupt");

  const [restart] = get("restart");
  assert.deepEqual(restart?.alive, [false, false], "workers exit with a restarted kernel");
  assert.equal(get("after restart")[0]?.two, 2, "the restarted kernel runs cells");
  const [shutdown] = get("shutdown");
  assert.deepEqual(shutdown?.alive, [false, false], "workers exit with a shut-down kernel");
});
