import assert from "node:assert/strict";
import { test } from "node:test";
import { errorOutput } from "../../kernel-ext/error-output";
import { liveTitle } from "../../kernel-ext/live-fit";
import { AbortError, ConfigError, WorkerLostError } from "../../sdk/errors/errors";
import { endOf } from "../../sdk/driver/fit-watch";
import { FitAborted } from "../../sdk/driver/fit-stop";
import { summarize } from "../../sdk/metrics/summary";
import type { StepRecord } from "../../sdk/metrics/records";

function steps(ms: number[]): StepRecord[] {
  return ms.map((m, step) => ({ step, epoch: 0, ms: m, samples: 64, loss: 1 / (step + 1), workers: [] }) as unknown as StepRecord);
}

test("the live plot's title says which rate it shows, and at the end shows the run summary's", () => {
  const info = { totalSteps: 12, workers: 2, strategy: "data" };
  const history = steps([400, 300, 200, 100, 100, 100, 100, 100, 100, 100, 50, 50]);
  assert.match(liveTitle(info, history.slice(0, 5), "training"), /^training: step 5\/12 on 2 worker\(s\), 291 samples\/s over the last 5 step\(s\), loss 0\.2000$/);
  const final = liveTitle(info, history, { by: "done" });
  const summary = summarize({ history, workers: [], epochs: 1, wallMs: 1800, plan: { prediction: null } } as unknown as Parameters<typeof summarize>[0]);
  assert.equal(/, (\d+) samples\/s over the run after 3 warm-up step\(s\)/.exec(final)?.[1], summary.samplesPerSecond.toFixed(0));
  assert.match(final, /^done: 12\/12 steps on 2 worker\(s\)/);
  // What ended it, in words: never "an error" for a stop asked for or a callback.
  assert.match(liveTitle(info, history.slice(0, 7), { by: "callback" }), /^ended by a callback \(model\.stopTraining\): 7\/12 steps/);
  assert.match(liveTitle(info, history.slice(0, 7), endOf(new AbortError("interrupted (the notebook's stop button)"))), /^stopped: interrupted \(the notebook's stop button\): 7\/12 steps/);
  assert.match(liveTitle(info, history.slice(0, 7), endOf(new FitAborted(new WorkerLostError("worker rank 1 exited")))), /^stopped by an error: worker rank 1 exited: 7\/12/);
});

test("a failed cell's error output: a meshtrain error is its type, code, statement, hint and causes, with no stack", () => {
  const cause = new WorkerLostError("worker rank 1 (ws://127.0.0.1:7070) exited with code 137", { hint: "look at its output" });
  const e = new ConfigError("pipeline: stages(5) != workers(2)", { hint: "use 2 stages\nor launch 5 workers", cause });
  const out = errorOutput(e);
  assert.equal(out.ename, "ConfigError");
  assert.equal(out.evalue, e.message);
  assert.deepEqual(out.traceback.slice(1), ["help: use 2 stages", "      or launch 5 workers", `caused by WorkerLostError: ${cause.message}`]);
  assert.match(out.traceback[0]!, /ConfigError.* \[MT_ERR_CONFIG\]: pipeline: stages\(5\) != workers\(2\)$/);
});

test("an interrupt is one line; another error keeps the cell's frames, not tslab's or Node's", () => {
  const interrupted = errorOutput(new Error("Interrupted asynchronously"));
  assert.equal(interrupted.ename, "Interrupted");
  assert.equal(interrupted.traceback.length, 1);
  const thrown = new TypeError("x is not a function");
  thrown.stack = ["TypeError: x is not a function", "    at evalmachine.<anonymous>:3:1", "    at Object.execute (/p/node_modules/tslab/dist/executor.js:170:13)", "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)"].join("\n");
  const out = errorOutput(thrown);
  assert.deepEqual(out.traceback.slice(1), ["    at evalmachine.<anonymous>:3:1"]);
});
