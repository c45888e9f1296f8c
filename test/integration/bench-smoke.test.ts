import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

/**
 * The benchmarks are never timed in tests; this only checks that `npm run bench` still runs end
 * to end (in --quick mode, written to bench/results/quick) and writes well-formed results.
 */
test("every benchmark runs and writes its results", () => {
  const root = path.join(__dirname, "..", "..", "..");
  const r = spawnSync(process.execPath, [path.join(root, "dist", "bench", "run-all.js"), "--quick"], { encoding: "utf8", timeout: 20 * 60_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  const dir = path.join(root, "bench", "results", "quick");
  for (const part of ["train", "allreduce", "scaling", "compression", "overhead", "pipeline", "ps", "sharded", "relay"]) {
    const data = JSON.parse(fs.readFileSync(path.join(dir, `${part}.json`), "utf8")) as { rows: unknown[]; machine: { cores: number } };
    assert.ok(data.rows.length > 0, part);
    assert.ok(data.machine.cores > 0);
    assert.match(fs.readFileSync(path.join(dir, `${part}.md`), "utf8"), /^### /);
  }
  const train = JSON.parse(fs.readFileSync(path.join(dir, "train.json"), "utf8")) as { rows: Array<{ model: string; runtime: string; samplesPerSecond: number; missing: string | null }> };
  const native = train.rows.find((x) => x.runtime === "meshtrain native")!;
  assert.ok(native.missing === null && native.samplesPerSecond > 0, "the native backend was measured");
  const embedding = train.rows.find((x) => x.model === "sentiment" && x.runtime === "meshtrain native")!;
  assert.ok(embedding.missing === null && embedding.samplesPerSecond > 0, "the embedding + LSTM model trained on the native kernels");
  assert.match(fs.readFileSync(path.join(dir, "README.md"), "utf8"), /Training throughput/);
  // Sharded: every meshtrain row measured each worker's memory.
  const sharded = JSON.parse(fs.readFileSync(path.join(dir, "sharded.json"), "utf8")) as { rows: Array<{ variant: string; samplesPerSecond: number; peakBytes: number[] }> };
  for (const r of sharded.rows.filter((x) => x.variant.startsWith("meshtrain"))) assert.ok(r.samplesPerSecond > 0 && r.peakBytes.length === 2 && r.peakBytes.every((b) => b > 0), JSON.stringify(r));
  // Between machines needs root and network namespaces; where it cannot make them it says why.
  const network = JSON.parse(fs.readFileSync(path.join(dir, "network.json"), "utf8")) as { rows: Array<{ samplesPerSecond: number; failures: string[] }>; accuracy: Array<{ accuracy: number[] }>; missing?: string };
  if (network.missing === undefined) {
    assert.ok(network.rows.length > 0 && network.rows.every((r) => r.failures.length === 0 && r.samplesPerSecond > 0), JSON.stringify(network.rows));
    assert.ok(network.accuracy[0]!.accuracy[0]! > 0.5, "the CNN learned MNIST over the shaped link");
  } else assert.match(fs.readFileSync(path.join(dir, "network.md"), "utf8"), /Not measured: /);
});
