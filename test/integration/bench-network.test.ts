import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { QUICK_RESULTS, quickResults, runBenches } from "../helpers/bench-smoke";

/**
 * bench:network runs end to end (--quick). It needs root and network namespaces; where it cannot
 * make them it says why. scripts/run-tests.js runs this file alone, as the other tests that make
 * network namespaces.
 */
test("the between-machines benchmark runs over shaped links and writes its results", () => {
  runBenches(["network"]);
  type Row = { peer: string; runs: number[]; samplesPerSecond: number; failures: string[]; rounds?: Array<{ measured: number; computeMs: number | null }> };
  const network = quickResults<{ rows: Row[]; accuracy: Array<{ accuracy: number[] }>; missing?: string }>("network");
  if (network.missing === undefined) {
    assert.ok(network.rows.length > 0 && network.rows.every((r) => r.failures.length === 0 && r.samplesPerSecond > 0), JSON.stringify(network.rows));
    // Each of meshtrain's runs is kept beside its own plan's prediction, with the compute it measured.
    const own = network.rows.filter((r) => r.peer === "meshtrain");
    assert.ok(own.length > 0 && own.every((r) => r.rounds?.length === r.runs.length && r.rounds.every((d, i) => d.measured === r.runs[i] && (d.computeMs ?? 0) > 0)), JSON.stringify(own));
    assert.ok(network.accuracy[0]!.accuracy[0]! > 0.5, "the CNN learned MNIST over the shaped link");
  } else assert.match(fs.readFileSync(path.join(QUICK_RESULTS, "network.md"), "utf8"), /Not measured: /);
});
