import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { AbortError, closeAll, cluster, ConfigError, datasets, liveClusters, type Cluster, type ClusterBuilder, type TrainingRun } from "../../sdk/index";
import { CURRENT_CELL } from "../../sdk/cluster/cell-origin";
import { smallClassifier, weightsMoved } from "../helpers/models";
import { isAlive } from "../helpers/processes";

/**
 * Stopping a fit on request, through real worker processes: an AbortSignal stops it at the next
 * step boundary with AbortError carrying the steps recorded so far, the workers stay ready and
 * the next fit on the same cluster trains; close() during a fit aborts it the same way.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 960, seed: 3 });
const o = { epochs: 1, batchSize: 16, optimizer: "adam" as const, loss: "categoricalCrossentropy" as const, seed: 1 };

for (const [name, build] of [
  ["data, 2 workers", () => cluster().workers(2).strategy("data")],
  ["pipeline, 2 stages", () => cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 })],
  ["async parameter servers, 2 workers", () => cluster().workers(2).ps(1).strategy("ps", { mode: "async" })],
] as Array<[string, () => ClusterBuilder]>) {
  test(`${name}: an AbortSignal stops the fit after the steps in flight; AbortError carries the run; the next fit trains`, async () => {
    const c = await build().backend("cpu").launch();
    try {
      const controller = new AbortController();
      const err = await c.fit(smallClassifier(6, 3), ds, { ...o, signal: controller.signal, onStep: (s) => void (s.step === 4 && controller.abort()) }).then(
        () => assert.fail("fit resolved"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof AbortError, String(err));
      assert.equal(err.name, "AbortError");
      assert.equal(err.code, "MT_ERR_ABORTED");
      const run = (err as AbortError<TrainingRun>).run!;
      const steps = run.history.map((s) => s.step);
      assert.ok(steps.length >= 5 && steps.length <= 7, `stopped within two steps of the abort: recorded ${steps.length} of 60`);
      assert.equal(c.state, "ready");
      const next = await c.fit(smallClassifier(6, 3), datasets.synthetic({ inputShape: [6], classes: 3, size: 64, seed: 3 }), o);
      assert.equal(next.history.length, 4);
      await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...o, signal: AbortSignal.abort() }), (e: unknown) => e instanceof AbortError && e.run?.toString !== undefined);
    } finally {
      await c.close();
    }
  });
}

test("data: after an abort the model holds the last whole step's weights, and a checkpoint of it was written", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-abort-"));
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  try {
    const model = smallClassifier(6, 3);
    const start = model.getWeights().map((w) => w.clone());
    const controller = new AbortController();
    const err = (await c.fit(model, ds, { ...o, checkpoint: { dir, every: 1000 }, onStep: (s) => void (s.step === 3 && controller.abort()), signal: controller.signal }).catch((e: unknown) => e)) as AbortError<TrainingRun>;
    assert.ok(err instanceof AbortError, String(err));
    const done = err.run!.history.length;
    assert.ok(weightsMoved(start, model), "the model took the trained weights");
    const latest = fs.readFileSync(path.join(dir, "latest"), "utf8").trim();
    assert.equal(latest, `step-${String(done).padStart(6, "0")}`, "the checkpoint is of the last whole step");
    assert.ok(fs.existsSync(path.join(dir, latest, "meta.json")));
  } finally {
    await c.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("close() during a fit aborts it the same way; the cluster leaves the registry and its workers exit", async () => {
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  const before = liveClusters().length;
  let closing: Promise<void> | undefined;
  const err = await c.fit(smallClassifier(6, 3), ds, { ...o, onStep: (s) => void (s.step === 2 && (closing = c.close())) }).catch((e: unknown) => e);
  await closing;
  assert.ok(err instanceof AbortError, String(err));
  assert.match(err.message, /close\(\)/);
  assert.equal(c.state, "closed");
  assert.equal(liveClusters().length, before - 1);
  for (const w of c.workers) assert.throws(() => process.kill(w.info.pid, 0), "worker process exited");
});

test("launching while clusters still run names them; closeAll() closes every one", async () => {
  const first = await cluster().workers(1).strategy("data").backend("cpu").launch();
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (written.push(String(chunk)), write(chunk, ...(rest as [])))) as typeof process.stderr.write;
  let second;
  try {
    second = await cluster().workers(1).strategy("data").backend("cpu").launch();
  } finally {
    process.stderr.write = write;
  }
  const said = written.join("");
  assert.match(said, /still runs 1 cluster\(s\) launched earlier/);
  assert.match(said, /1 worker\(s\), strategy "data", launched \d+ s ago, ready/);
  assert.match(said, /closeAll\(\)/);
  await closeAll();
  assert.equal(first.state, "closed");
  assert.equal(second.state, "closed");
  assert.deepEqual(liveClusters(), []);
});

test("a launch from the cell that launched before replaces its cluster unless kept or named; liveClusters() returns the clusters", async () => {
  const g = globalThis as Record<symbol, unknown>;
  const pids = (c: Cluster): number[] => c.workers.map((w) => w.info.pid);
  const exited = (ps: number[]): boolean => ps.every((pid) => !isAlive(pid));
  try {
    // What meshtrain's kernel sets before each cell (kernel-ext/cell-context.ts).
    g[CURRENT_CELL] = "id:cell-a";
    const first = await cluster().workers(1).backend("cpu").launch();
    const firstPids = pids(first);
    const second = await cluster().workers(1).backend("cpu").launch();
    assert.equal(first.state, "closed", "the earlier launch of the same cell was closed");
    assert.ok(exited(firstPids), "its workers exited");
    const kept = await cluster().workers(1).backend("cpu").launch({ keep: true });
    const named = await cluster().workers(1).backend("cpu").launch({ name: "big" });
    await assert.rejects(cluster().workers(1).backend("cpu").launch({ name: "big" }), (e: unknown) => e instanceof ConfigError && /a cluster named "big" is still running/.test(e.message));
    g[CURRENT_CELL] = "id:cell-b";
    const other = await cluster().workers(1).backend("cpu").launch();
    assert.deepEqual(liveClusters(), [second, kept, named, other], "other cells', kept and named clusters stay");
    g[CURRENT_CELL] = "id:cell-a";
    const third = await cluster().workers(1).backend("cpu").launch();
    assert.deepEqual([second.state, kept.state, named.state, other.state], ["closed", "ready", "ready", "ready"]);
    assert.equal(named.name, "big");
    await assert.rejects(cluster().workers(1).launch({ keep: "yes" } as unknown as { keep: boolean }), ConfigError);
    for (const c of liveClusters()) await c.close();
    assert.deepEqual(liveClusters(), []);
    assert.equal(third.state, "closed");
  } finally {
    delete g[CURRENT_CELL];
    await closeAll();
  }
});

