import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, DataError, datasets } from "../../sdk/index";
import { smallClassifier } from "../helpers/models";

tf.enableProdMode();

test("gpus(n) without enough hardware GPUs fails at launch naming what it found; fallback: \"cpu\" starts CPU workers and says so", async () => {
  // No machine this runs on has two hardware GPUs (CI has none): a software adapter is not taken unasked.
  await assert.rejects(cluster().gpus(2).launch(), (e: unknown) => e instanceof ConfigError && /^gpus\(2\) asks for 2 GPU\(s\); this machine has /.test((e as Error).message) && /fallback: "cpu"/.test((e as ConfigError).hint ?? ""));
  const c = await cluster().gpus(2, { fallback: "cpu" }).launch();
  try {
    assert.equal(c.size, 2);
    assert.ok(c.notes.some((n) => /^gpus\(2\) asks for 2 GPU\(s\).*; starting 2 CPU worker\(s\) instead, as fallback: "cpu" asks$/.test(n)), c.notes.join("\n"));
    for (const w of c.workers) {
      assert.equal(w.info.device, "cpu");
      assert.ok(w.local);
      assert.ok(w.info.memoryBytes > 0);
    }
  } finally {
    await c.close();
  }
});

test("bad input is refused before anything is sent, and the cluster stays ready", async () => {
  const c = await cluster().workers(3).backend("cpu").launch();
  try {
    const model = smallClassifier(6, 3);
    await assert.rejects(
      c.fit(model, datasets.synthetic({ inputShape: [5], classes: 3 }), { batchSize: 6 }),
      (e: unknown) => e instanceof DataError && /inputs of shape \[6\] but dataset "synthetic-0" has x samples of shape \[5\]/.test((e as Error).message),
    );
    await assert.rejects(
      c.fit(model, datasets.synthetic({ inputShape: [6], classes: 4 }), { batchSize: 6 }),
      (e: unknown) => e instanceof DataError && /outputs shape \[3\]/.test((e as Error).message),
    );
    await assert.rejects(
      c.fit(model, datasets.synthetic({ inputShape: [6], classes: 3 }), { batchSize: 100 }),
      (e: unknown) => e instanceof ConfigError && /batchSize 100 is not divisible by 3 replicas/.test((e as Error).message),
    );
    assert.equal(c.state, "ready");
    const plan = c.plan(model, { batchSize: 9 });
    assert.deepEqual(plan.batch?.perReplica, [3, 3, 3]);
    const run = await c.fit(model, datasets.synthetic({ inputShape: [6], classes: 3, size: 30 }), { batchSize: 9, optimizer: "adam" });
    assert.equal(run.history.length, 4);
    assert.deepEqual(run.history.map((s) => s.samples), [9, 9, 9, 3]);
    assert.match(String(run), /4 steps over 1 epoch/);
  } finally {
    await c.close();
  }
});
