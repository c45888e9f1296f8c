import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { CheckpointError, cluster, ConfigError, datasets, WorkerLostError, type FitOptions } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";

/**
 * Checkpoints: a data-parallel fit killed at a random step and resumed from its last checkpoint
 * ends with the weights of a fit never interrupted; corrupt or mismatched checkpoints are
 * refused with CheckpointError naming the file.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 200, seed: 6 });
// 13 steps per epoch (the last of 8 samples), 3 epochs: 39 steps.
const options: FitOptions = { epochs: 3, batchSize: 16, optimizer: { name: "adam", learningRate: 0.01 }, seed: 9, loss: "categoricalCrossentropy" };

describe("checkpoint and resume (data parallelism, 2 workers)", () => {
  let dir: string;
  let reference: tf.LayersModel;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ckpt-"));
    const c = await cluster().workers(2).launch();
    try {
      reference = smallClassifier(6, 3);
      await c.fit(reference, ds, options);
    } finally {
      await c.close();
    }
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test("killed at a random step and resumed, it ends with the uninterrupted run's weights", async (t) => {
    const killAt = 5 + Math.floor(Math.random() * 30);
    const first = await cluster().workers(2).launch();
    const err = await first
      .fit(smallClassifier(6, 3), ds, { ...options, checkpoint: { dir, every: 4 }, onStep: (s) => void (s.step === killAt && first.kill(1)) })
      .then(() => undefined, (e: unknown) => e);
    await first.close();
    assert.ok(err instanceof WorkerLostError, String(err));
    const latest = fs.readFileSync(path.join(dir, "latest"), "utf8").trim();
    const kept = fs.readdirSync(dir).filter((f) => f.startsWith("step-")).sort();
    t.diagnostic(`killed a worker at step ${killAt}; checkpoints kept: ${kept.join(", ")}; latest ${latest}`);
    assert.ok(kept.length >= 1 && kept.length <= 2 && kept.includes(latest));

    const second = await cluster().workers(2).launch();
    try {
      const resumed = smallClassifier(6, 3, { seed: 99 });
      const run = await second.fit(resumed, ds, { ...options, seed: 12345, checkpoint: { dir, every: 4 }, resumeFrom: dir });
      const from = Number(latest.slice(5));
      assert.equal(run.history[0]!.step, from, "training resumed at the checkpoint's step");
      assert.equal(run.history.length, 39 - from);
      assert.equal(run.seed, 9, "the checkpoint's seed orders the data");
      const diff = maxRelativeDifference(resumed, reference);
      t.diagnostic(`resumed from step ${from}: largest relative difference from the uninterrupted run ${diff.toExponential(2)}`);
      assert.ok(diff <= 1e-6, `relative difference ${diff}`);
      assert.equal(fs.readFileSync(path.join(dir, "latest"), "utf8").trim(), "step-000039", "the resumed fit wrote its last checkpoint");
    } finally {
      await second.close();
    }
  });

  test('every: "auto" writes the first after 4 steps, times it, chooses the interval and says so; resumed from one, the fit ends as the uninterrupted one', async (t) => {
    const auto = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ckpt-auto-"));
    const c = await cluster().workers(2).launch();
    try {
      const run = await c.fit(smallClassifier(6, 3), ds, { ...options, checkpoint: { dir: auto, every: "auto" } });
      const chosen = run.notes.find((l) => l.startsWith("checkpoints every")) ?? "";
      const kept = fs.readdirSync(auto).filter((f) => f.startsWith("step-")).sort();
      t.diagnostic(`${chosen}; kept ${kept.join(", ")}`);
      const m = /^checkpoints every (\d+) step\(s\), chosen \(every "auto"\): the first took \d+ ms against [\d.]+ ms a step, so writing them takes at most 5% of the fit/.exec(chosen);
      assert.ok(m, chosen);
      // The first after 4 steps, then every k; the last at the end; the one before it kept.
      const k = Number(m[1]);
      const before = 4 + Math.floor((38 - 4) / k) * k;
      assert.deepEqual(kept, [`step-${String(before).padStart(6, "0")}`, "step-000039"]);
      const resumed = smallClassifier(6, 3, { seed: 99 });
      const again = await c.fit(resumed, ds, { ...options, resumeFrom: path.join(auto, kept[0]!) });
      assert.equal(again.history[0]!.step, before);
      const diff = maxRelativeDifference(resumed, reference);
      assert.ok(diff <= 1e-6, `relative difference ${diff}`);
    } finally {
      await c.close();
      fs.rmSync(auto, { recursive: true, force: true });
    }
  });

  test("a corrupt checkpoint is refused, naming the file and the previous whole one", async () => {
    const latest = fs.readFileSync(path.join(dir, "latest"), "utf8").trim();
    const file = path.join(dir, latest, "weights.bin");
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 1] ^= 0xff;
    fs.writeFileSync(file, bytes);
    const c = await cluster().workers(2).launch();
    try {
      await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...options, resumeFrom: dir }), (e: unknown) => {
        assert.ok(e instanceof CheckpointError, String(e));
        assert.match((e as Error).message, new RegExp(`${latest}/weights\\.bin is corrupt: its SHA-256 differs`));
        assert.match((e as Error).message, /help: the previous checkpoint is whole: fit with resumeFrom: ".*step-\d+"/);
        return true;
      });
      assert.equal(c.state, "ready", "a refused checkpoint leaves the cluster usable");
      // Half-written checkpoints (a crash mid-write) are never named by latest, and are ignored.
      fs.mkdirSync(path.join(dir, ".tmp-step-000099-1"));
      const previous = fs.readdirSync(dir).filter((f) => f.startsWith("step-")).sort()[0]!;
      fs.writeFileSync(path.join(dir, "latest"), `${previous}\n`);
      const run = await c.fit(smallClassifier(6, 3), ds, { ...options, resumeFrom: dir });
      assert.equal(run.history[0]!.step, Number(previous.slice(5)));
      // Another batch size would read the data in another order: refused.
      await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...options, batchSize: 20, resumeFrom: dir }), /was made with batchSize 16; this fit has 20/);
    } finally {
      await c.close();
    }
  });

  test("async parameter servers refuse checkpoint options before training, and say why", async () => {
    const c = await cluster().workers(2).ps(1).strategy("ps", { mode: "async" }).backend("cpu").launch();
    try {
      await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...options, checkpoint: { dir, every: 2 } }), (e: unknown) => e instanceof ConfigError && /written for sync parameter servers/.test((e as Error).message));
      assert.equal(c.state, "ready");
    } finally {
      await c.close();
    }
  });
});

test("Adagrad, Adadelta and Adamax: stopped after a checkpoint and resumed, each ends with its uninterrupted run's weights", async (t) => {
  const c = await cluster().workers(2).launch();
  try {
    for (const optimizer of [
      { name: "adagrad", learningRate: 0.1, initialAccumulatorValue: 0.1 },
      { name: "adadelta", learningRate: 1, rho: 0.9 },
      { name: "adamax", learningRate: 0.01, beta1: 0.9, beta2: 0.999, decay: 0.01 },
    ] as const) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ckpt-"));
      try {
        const o: FitOptions = { ...options, optimizer };
        const reference = smallClassifier(6, 3);
        await c.fit(reference, ds, o);
        // Stopped from step 10 on (the stop lands at a step boundary): the last checkpoint carries the optimizer's slots and counters.
        const stop = new AbortController();
        await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...o, signal: stop.signal, checkpoint: { dir, every: 4 }, onStep: (s) => void (s.step === 10 && stop.abort()) }));
        const resumed = smallClassifier(6, 3, { seed: 41 });
        const run = await c.fit(resumed, ds, { ...o, resumeFrom: dir });
        const diff = maxRelativeDifference(resumed, reference);
        t.diagnostic(`${optimizer.name}: resumed from step ${run.history[0]!.step}, largest relative difference ${diff.toExponential(2)}`);
        const from = run.history[0]!.step;
        assert.ok(from > 0 && from % 4 === 0 && from < 39, `resumed from step ${from}`);
        assert.ok(diff <= 1e-6, `${optimizer.name}: relative difference ${diff}`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await c.close();
  }
});

/** Interrupted at a random step (a worker killed), resumed on a new cluster of the same shape: the uninterrupted result. */
for (const [name, make] of [
  ["pipeline (1F1B, 2 stages x 2 micro-batches)", () => cluster().workers(2).strategy("pipeline", { microBatches: 2 })],
  ["hybrid (2 replicas x 2 stages)", () => cluster().workers(4).strategy("hybrid", { stages: 2 })],
  ["sync parameter servers (2 workers, 2 servers)", () => cluster().workers(2).ps(2).strategy("ps", { mode: "sync" })],
] as const) {
  test(`checkpoint and resume: ${name}`, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ckpt-"));
    try {
      const ref = await make().launch();
      const reference = smallClassifier(6, 3);
      try {
        await ref.fit(reference, ds, options);
      } finally {
        await ref.close();
      }
      const killAt = 5 + Math.floor(Math.random() * 28);
      const first = await make().launch();
      const err = await first
        .fit(smallClassifier(6, 3), ds, { ...options, checkpoint: { dir, every: 5 }, onStep: (s) => void (s.step === killAt && first.kill(1)) })
        .then(() => undefined, (e: unknown) => e);
      await first.close();
      assert.ok(err instanceof WorkerLostError, String(err));
      const second = await make().launch();
      try {
        const resumed = smallClassifier(6, 3, { seed: 77 });
        const run = await second.fit(resumed, ds, { ...options, resumeFrom: dir });
        const diff = maxRelativeDifference(resumed, reference);
        t.diagnostic(`killed at step ${killAt}, resumed from step ${run.history[0]!.step}: largest relative difference ${diff.toExponential(2)}`);
        assert.ok(run.history[0]!.step > 0 && run.history[0]!.step % 5 === 0);
        assert.ok(diff <= 1e-6, `relative difference ${diff}`);
      } finally {
        await second.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
