import assert from "node:assert/strict";
import { test } from "node:test";
import { quickResults, runBenches } from "../helpers/bench-smoke";

/** The rest of bench-smoke.test.ts's check: these benchmarks run end to end (--quick) and write their results. */
test("the compression, pipeline, parameter-server and GPU benchmarks run and write their results", () => {
  runBenches(["compression", "pipeline", "ps", "gpu"]);
});

test("the fault benchmark: elastic data parallelism and a pipeline, each with a spare, survive a killed worker, equal to the uninterrupted run", () => {
  runBenches(["faults"]);
  type Trial = { survived: boolean; error?: string; difference?: number; recoveredMs?: number; membership?: string[] };
  const rows = quickResults<{ rows: Array<{ scenario: string; trials: Trial[] }> }>("faults").rows;
  const data = rows.find((r) => r.scenario === "data, elastic + spares(1)")!.trials[0]!;
  assert.ok(data.survived && data.difference! < 1e-4 && data.recoveredMs! > 0, JSON.stringify(data));
  assert.match(data.membership!.join("; "), /^left \d at \d+; joined 3 at \d+$/);
  const pipeline = rows.find((r) => r.scenario.startsWith("pipeline + spares(1)"))!.trials[0]!;
  assert.ok(pipeline.survived && pipeline.difference! < 1e-4, JSON.stringify(pipeline));
  assert.match(pipeline.membership!.join("; "), /^left (\d) at (\d+); joined \1 at \2$/);
  const servers = rows.find((r) => r.scenario === "parameter servers, sync, elastic (a worker)")!.trials[0]!;
  assert.ok(servers.survived && servers.difference! < 1e-4 && servers.recoveredMs! > 0, JSON.stringify(servers));
});
