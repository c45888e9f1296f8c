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
  const network = quickResults<{ rows: Array<{ samplesPerSecond: number; failures: string[] }>; accuracy: Array<{ accuracy: number[] }>; missing?: string }>("network");
  if (network.missing === undefined) {
    assert.ok(network.rows.length > 0 && network.rows.every((r) => r.failures.length === 0 && r.samplesPerSecond > 0), JSON.stringify(network.rows));
    assert.ok(network.accuracy[0]!.accuracy[0]! > 0.5, "the CNN learned MNIST over the shaped link");
  } else assert.match(fs.readFileSync(path.join(QUICK_RESULTS, "network.md"), "utf8"), /Not measured: /);
});
