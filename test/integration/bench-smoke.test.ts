import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { QUICK_RESULTS, quickResults, runBenches } from "../helpers/bench-smoke";

/**
 * The benchmarks are never timed in tests; these only check that `npm run bench` still runs end
 * to end (in --quick mode, written to bench/results/quick) and writes well-formed results. The
 * parts are split over three files (this one, bench-smoke-compression and bench-network) so
 * that they run beside other tests; the network part needs the machine to itself.
 */
test("the zoo, throughput, all-reduce, scaling, overhead, relay and sharded benchmarks run and write their results", () => {
  runBenches(["zoo", "train", "allreduce", "scaling", "overhead", "relay", "sharded"]);
  // The zoo: every model (ResNet-50 aside) trained one step by the native step, beside PyTorch.
  const zoo = quickResults<{ rows: Array<{ model: string; meshtrain: number; pytorch: number; native: boolean; estimateMiB: number | null; peakMiB: number; peerPeakMiB: number }> }>("zoo");
  assert.ok(zoo.rows.length >= 7, `zoo rows: ${zoo.rows.length}`);
  for (const r of zoo.rows) assert.ok(r.native === true && r.meshtrain > 0 && r.pytorch > 0 && (r.estimateMiB ?? 0) > 0 && r.peakMiB > 0 && r.peerPeakMiB > 0, JSON.stringify(r));
  const train = quickResults<{ rows: Array<{ model: string; runtime: string; samplesPerSecond: number; missing: string | null }> }>("train");
  const native = train.rows.find((x) => x.runtime === "meshtrain native")!;
  assert.ok(native.missing === null && native.samplesPerSecond > 0, "the native backend was measured");
  const embedding = train.rows.find((x) => x.model === "sentiment" && x.runtime === "meshtrain native")!;
  assert.ok(embedding.missing === null && embedding.samplesPerSecond > 0, "the embedding + LSTM model trained on the native kernels");
  assert.match(fs.readFileSync(path.join(QUICK_RESULTS, "README.md"), "utf8"), /Training throughput/);
  // Sharded: every meshtrain row measured each worker's memory.
  const sharded = quickResults<{ rows: Array<{ variant: string; samplesPerSecond: number; peakBytes: number[] }> }>("sharded");
  for (const r of sharded.rows.filter((x) => x.variant.startsWith("meshtrain"))) assert.ok(r.samplesPerSecond > 0 && r.peakBytes.length === 2 && r.peakBytes.every((b) => b > 0), JSON.stringify(r));
});
