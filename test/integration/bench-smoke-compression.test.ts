import { test } from "node:test";
import { runBenches } from "../helpers/bench-smoke";

/** The rest of bench-smoke.test.ts's check: these benchmarks run end to end (--quick) and write their results. */
test("the compression, pipeline, parameter-server and GPU benchmarks run and write their results", () => {
  runBenches(["compression", "pipeline", "ps", "gpu"]);
});
