import assert from "node:assert/strict";
import { test } from "node:test";
import { quickResults, runBenches } from "../helpers/bench-smoke";

/** The rest of bench-smoke.test.ts's check: these benchmarks run end to end (--quick) and write their results. */
test("the compression, pipeline, parameter-server and GPU benchmarks run and write their results", () => {
  runBenches(["compression", "pipeline", "ps", "gpu"]);
});

test("the fault benchmark: an elastic fit with a spare survives a killed worker, equal to the uninterrupted run; a pipeline ends naming the worker", () => {
  runBenches(["faults"]);
  type Trial = { survived: boolean; error?: string; difference?: number; recoveredMs?: number; membership?: string[] };
  const rows = quickResults<{ rows: Array<{ scenario: string; trials: Trial[] }> }>("faults").rows;
  const spare = rows.find((r) => r.scenario === "data, elastic + spares(1)")!.trials[0]!;
  assert.ok(spare.survived && spare.difference! < 1e-4 && spare.recoveredMs! > 0, JSON.stringify(spare));
  assert.match(spare.membership!.join("; "), /^left \d at \d+; joined 3 at \d+$/);
  const pipeline = rows.find((r) => r.scenario.startsWith("pipeline"))!.trials[0]!;
  assert.ok(!pipeline.survived, JSON.stringify(pipeline));
  assert.match(pipeline.error!, /^WorkerLostError: worker rank \d \(ws:.*\) exited \(killed by SIGKILL\)/);
});
