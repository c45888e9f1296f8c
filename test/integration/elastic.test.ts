import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, StateError, WorkerLostError, type Dataset, type FitOptions } from "../../sdk/index";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { deepClassifier, maxRelativeDifference, smallClassifier } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { slicedReference } from "../helpers/sliced-reference";
import { batchNormClassifier } from "../helpers/stateful-models";
import { TEST_HEARTBEAT } from "../helpers/heartbeat";
import { isAlive, waitFor } from "../helpers/processes";

/**
 * Elastic data parallelism: a worker that dies mid-fit is left behind and the others carry on
 * from the last step they all completed, sharing its slice; a worker added mid-fit joins at a
 * step boundary. The global batch is the same whoever computes it, so either way the result
 * must equal single-process model.fit on the same batches.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 240, seed: 4 });
const held = datasets.synthetic({ inputShape: [6], classes: 3, size: 30, seed: 44 });
const options: FitOptions = { epochs: 2, batchSize: 24, optimizer: { name: "adam", learningRate: 0.01 }, seed: 5, loss: "categoricalCrossentropy" };


async function reference(d: Dataset, epochs = 2): Promise<tf.LayersModel> {
  const m = smallClassifier(6, 3);
  await modelFitReference(m, d, { epochs, batchSize: 24, optimizer: { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 }, seed: 5 });
  return m;
}

describe("elastic data parallelism", () => {
  test("a worker killed mid-fit is left behind; the others finish, equal to model.fit; callbacks see each batch and epoch once; each epoch is validated", async (t) => {
    const c = await cluster().workers(3).strategy("data", { elastic: { minWorkers: 2 } }).timeouts({ stepMs: 30_000 }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      const model = smallClassifier(6, 3);
      const seen: string[] = [];
      const epochLoss: number[] = [];
      const callbacks = {
        onTrainBegin: async () => void seen.push("train"),
        onEpochBegin: async (e: number) => void seen.push(`E${e}`),
        onBatchEnd: async (b: number) => void seen.push(`b${b}`),
        onEpochEnd: async (_e: number, logs?: tf.Logs) => void epochLoss.push(logs!.loss as number),
        onTrainEnd: async () => void seen.push("end"),
      };
      const run = await c.fit(model, ds, { ...options, callbacks, validationData: held, onStep: (s) => void (s.step === 6 && c.kill(1)) });
      // Steps after the loss are sent again; their callbacks are called once, when every member completed them.
      const batches = Array.from({ length: 10 }, (_, i) => `b${i}`);
      assert.deepEqual(seen, ["train", "E0", ...batches, "E1", ...batches, "end"]);
      epochLoss.forEach((l, e) => assert.ok(Math.abs(l - run.byEpoch.history.loss![e]!) < 1e-6, `epoch ${e}: ${l} vs ${run.byEpoch.history.loss![e]}`));
      assert.equal(epochLoss.length, 2);
      // Each epoch validated by the members then; the last equals model.fit's model evaluated on the held-out samples.
      assert.equal(run.byEpoch.history.val_loss?.length, 2);
      const ref0 = await reference(ds);
      const { x: hx, y: hy } = held.toTensors();
      ref0.compile({ optimizer: "sgd", loss: "categoricalCrossentropy" });
      const evaluated = (ref0.evaluate(hx, hy, { batchSize: 24 }) as tf.Scalar).dataSync()[0]!;
      assert.ok(Math.abs(run.byEpoch.history.val_loss![1]! - evaluated) < 1e-4 * Math.max(1, evaluated), `val_loss ${run.byEpoch.history.val_loss![1]} vs model.evaluate's ${evaluated}`);
      const ref = await reference(ds);
      const diff = maxRelativeDifference(model, ref);
      const m = run.membership;
      t.diagnostic(`rank 1 left at step ${m[0]?.step}: ${m[0]?.cause}; difference from model.fit ${diff.toExponential(2)}`);
      assert.equal(m.length, 1);
      assert.deepEqual([m[0]!.change, m[0]!.rank, m[0]!.workers], ["left", 1, 2]);
      assert.match(m[0]!.cause!, /worker rank 1 .*exited \(killed by SIGKILL\)/);
      assert.deepEqual(run.history.map((s) => s.step), Array.from({ length: 20 }, (_, i) => i), "every step once, in order");
      assert.ok(run.history.slice(-3).every((s) => s.workers.every((w) => w.rank !== 1) && s.workers.length === 2), "the last steps ran on the two left");
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
      await assert.rejects(c.fit(smallClassifier(6, 3), ds, options), StateError);
    } finally {
      await c.close();
    }
  });

  test("BatchNormalization: a worker killed mid-fit leaves no replica apart; moving statistics equal the reference of the replicas each step ran on", async (t) => {
    const c = await cluster().workers(3).strategy("data", { elastic: { minWorkers: 2 } }).timeouts({ stepMs: 30_000 }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      const model = batchNormClassifier();
      const o = { ...options, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
      const run = await c.fit(model, ds, { ...o, onStep: (s) => void (s.step === 6 && c.kill(1)) });
      assert.equal(run.membership.length, 1);
      // Steps before the one training went on from were cut for, and summed over, all three: the
      // killed worker may have sent its part of the last of them and died before reporting it.
      const from = run.membership[0]!.step;
      const counts = run.history.map((s) => (s.step < from ? 3 : 2));
      t.diagnostic(`training went on from step ${from} on two; workers reporting per step: ${run.history.map((s) => s.workers.length).join(" ")}`);
      assert.ok(run.history.slice(from).every((s) => s.workers.length === 2), "after the loss, every step ran on two");
      assert.ok(from > 0 && from < run.history.length);
      const ref = batchNormClassifier();
      slicedReference(ref, ds, { epochs: 2, batchSize: 24, optimizer: o.optimizer, loss: "categoricalCrossentropy", seed: 5, replicas: (step) => counts[step]! });
      const diff = maxRelativeDifference(model, ref);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  test("a worker added mid-fit gets the weights and joins at a step boundary, equal to model.fit", async (t) => {
    // Stock cpu kernels and 600 steps: long enough (about 4x what it takes here) for a new worker process to start and join.
    const c = await cluster().workers(2).strategy("data", { elastic: { minWorkers: 1 } }).timeouts({ stepMs: 30_000 }).backend("cpu").launch();
    const long = datasets.synthetic({ inputShape: [6], classes: 3, size: 14_400, seed: 4 });
    try {
      const model = smallClassifier(6, 3);
      let joined: Promise<number> | undefined;
      const run = await c.fit(model, long, { ...options, epochs: 1, onStep: (s) => void (s.step === 3 && (joined = c.add())) });
      assert.equal(await joined, 2);
      const ref = await reference(long, 1);
      const diff = maxRelativeDifference(model, ref);
      const m = run.membership;
      t.diagnostic(`rank 2 joined at step ${m[0]?.step}; difference from model.fit ${diff.toExponential(2)}`);
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.workers]), [["joined", 2, 3]]);
      assert.ok(run.history.slice(m[0]!.step).every((s) => s.workers.length === 3), "after joining, every step ran on three");
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  test("replace: a worker killed mid-fit is replaced by a new local worker, which joins at a step boundary; equal to model.fit", async (t) => {
    const c = await cluster().workers(2).strategy("data", { elastic: { minWorkers: 1, replace: true } }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      assert.match(String(c.plan(smallClassifier(6, 3), { batchSize: 24 })), /replace: for each worker lost a new local worker \(after join\(\): the next that joins\) is started/);
      const model = smallClassifier(6, 3);
      // After the kill, each batch's end waits (the loop awaits callbacks) until the cluster has the replacement, so it joins mid-fit however slowly it starts.
      let killed = false;
      const callbacks = {
        onBatchEnd: async (b: number) => {
          if (!killed && b === 3) return void ((killed = true), c.kill(1));
          if (killed) await waitFor("the replacement worker to be started and handed to the fit", () => c.workers.length === 3, 60_000);
        },
      };
      const run = await c.fit(model, ds, { ...options, callbacks });
      const m = run.membership;
      t.diagnostic(m.map((x) => `rank ${x.rank} ${x.change} at step ${x.step}`).join("; "));
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.workers]), [["left", 1, 1], ["joined", 2, 2]]);
      assert.ok(m[1]!.step < run.history.length - 1, "it joined before the last step");
      assert.ok(run.history.slice(m[1]!.step).every((s) => s.workers.length === 2), "after the replacement joined, every step ran on two");
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  test("spares: one lost while idle leaves the pool; a frozen worker is lost, fenced (killed) and its place taken by the other with no start-up; a second loss, no spare left, goes on with fewer; equal to model.fit", async (t) => {
    const c = await cluster().workers(2).spares(2).strategy("data", { elastic: { minWorkers: 1 } }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    let frozen = 0;
    try {
      assert.match(String(c.plan(smallClassifier(6, 3), { batchSize: 24 })), /replace: 2 spare\(s\), started with the cluster and idle, take the places of the first 2 worker\(s\) lost, with no start-up; after them the fit goes on with fewer/);
      assert.match(String(c), /\n {2}spare {2}ws:\/\/127\.0\.0\.1:\d+ .* pid \d+ \(local\), idle/);
      process.kill(c.idleSpares[1]!.info.pid, "SIGKILL");
      await waitFor("the driver to drop the spare killed while idle", () => c.idleSpares.length === 1, 30_000);
      assert.equal(c.state, "ready", "a spare lost while idle is not the members' loss");
      const spare = c.idleSpares[0]!.info.pid;
      frozen = c.workers[1]!.info.pid;
      const model = smallClassifier(6, 3);
      let batches = 0;
      const callbacks = {
        onBatchEnd: async () => {
          batches++;
          if (batches === 3) process.kill(frozen, "SIGSTOP");
          // Each batch's end waits (the loop awaits callbacks) until the spare is in, so it joins mid-fit however long the heartbeat takes to call the frozen worker lost.
          if (batches > 3 && batches < 14) await waitFor("the spare to be handed to the fit", () => c.workers.length === 3, 60_000);
          if (batches === 14) c.kill(0);
        },
      };
      const run = await c.fit(model, ds, { ...options, callbacks });
      const m = run.membership;
      t.diagnostic(m.map((x) => `rank ${x.rank} ${x.change} at step ${x.step}`).join("; "));
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.workers]), [["left", 1, 1], ["joined", 2, 2], ["left", 0, 1]]);
      assert.match(m[0]!.cause ?? "", new RegExp(`worker rank 1 .* was silent for \\d+ ms \\(heartbeat timeout ${TEST_HEARTBEAT.timeoutMs} ms\\)`));
      assert.equal(c.workers[2]!.info.pid, spare, "the spare's own process took the place: none was started");
      assert.equal(c.idleSpares.length, 0);
      assert.ok(!isAlive(frozen), "the frozen worker was killed when the fit went on without it, so it cannot answer later");
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      if (isAlive(frozen)) process.kill(frozen, "SIGKILL");
      await c.close();
    }
  });

  test("evict: a worker slowed 200x is let go after 3 slow steps in a row and a spare takes its place; equal to model.fit", async (t) => {
    const c = await cluster().workers(2).spares(1).slowdown(1, 200).strategy("data", { elastic: { minWorkers: 1, evict: { slowerThan: 4, steps: 3 } } }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      assert.match(String(c.plan(smallClassifier(6, 3), { batchSize: 24 })), /evict: a worker whose compute takes more than 4x the others' median \(and 10 ms more\) for 3 steps in a row is let go as if lost/);
      const model = smallClassifier(6, 3);
      let batches = 0;
      const callbacks = { onBatchEnd: async () => void (++batches >= 10 && (await waitFor("the slowed worker to be evicted and the spare to join", () => c.workers.length === 3, 60_000))) };
      const run = await c.fit(model, ds, { ...options, callbacks });
      const m = run.membership;
      t.diagnostic(m.map((x) => `rank ${x.rank} ${x.change} at step ${x.step}: ${x.cause ?? ""}`).join("; "));
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.workers]), [["left", 1, 1], ["joined", 2, 2]]);
      assert.match(m[0]!.cause ?? "", /worker rank 1 \(ws:.*\) was evicted at step \d+: its compute took more than 4x the others' median for 3 steps in a row/);
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  for (const [name, make] of [
    ["pipeline", () => cluster().workers(3).spares(1).strategy("pipeline", { microBatches: 2, schedule: "1f1b" })],
    ["hybrid", () => cluster().workers(4).spares(1).strategy("hybrid", { stages: 2 })],
  ] as const) {
    test(`${name} with a spare: a killed stage's place is taken by the spare as the same rank, every stage loaded from the last checkpoint and the steps since run again; callbacks and onStep see each step once; equal to model.fit`, async (t) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-stage-spare-"));
      const c = await make().timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
      try {
        const model = deepClassifier(6, 3, { hidden: 3, width: 16 });
        const spare = c.idleSpares[0]!.info.pid;
        const seen: number[] = [];
        const ended: number[] = [];
        const callbacks = { onBatchEnd: (b: number) => void ended.push(b), onEpochEnd: (e: number) => void ended.push(-1 - e) };
        const run = await c.fit(model, ds, { ...options, checkpoint: { dir, every: 4 }, callbacks, onStep: (s) => void (seen.push(s.step), s.step === 13 && c.kill(1)) });
        const m = run.membership;
        t.diagnostic(m.map((x) => `rank ${x.rank} ${x.change}, training went on from step ${x.step}`).join("; "));
        assert.deepEqual(m.map((x) => [x.change, x.rank, x.step]), [["left", 1, 12], ["joined", 1, 12]]);
        assert.match(m[0]!.cause!, /worker rank 1 .* exited \(killed by SIGKILL\)/);
        assert.equal(c.workers[1]!.info.pid, spare, "the spare runs rank 1's stage now");
        const steps = Array.from({ length: 20 }, (_, i) => i);
        assert.deepEqual(seen, steps, "onStep saw each step once");
        assert.deepEqual(run.history.map((h) => h.step), steps);
        assert.deepEqual(ended, [...steps.slice(0, 10), -1, ...steps.slice(0, 10), -2], "each batch and epoch ended once, in order");
        const ref = deepClassifier(6, 3, { hidden: 3, width: 16 });
        await modelFitReference(ref, ds, { epochs: 2, batchSize: 24, optimizer: { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 }, seed: 5 });
        const diff = maxRelativeDifference(model, ref);
        assert.ok(diff < 1e-4, `relative difference ${diff}`);
      } finally {
        await c.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test("a pipeline with spares needs a checkpoint to recover from, and says so", async () => {
    const c = await cluster().workers(2).spares(1).strategy("pipeline").launch();
    try {
      await assert.rejects(c.fit(deepClassifier(6, 3, { hidden: 3, width: 16 }), ds, options), /spares\(1\) take a lost stage's place from the fit's last checkpoint, and this fit writes none/);
      assert.equal(c.state, "ready");
    } finally {
      await c.close();
    }
  });

  test("spares are refused without elastic, under async parameter servers and strategy auto, and for workers started elsewhere", () => {
    assert.throws(() => cluster().workers(2).spares(1).strategy("data").spec(), /spares\(1\) wait for a lost worker, but without elastic a lost worker fails the fit/);
    assert.throws(() => cluster().workers(2).ps(1).spares(1).strategy("ps", { mode: "async" }).spec(), /spares\(1\) take a lost server's place from the fit's last checkpoint, and async parameter servers write none/);
    assert.throws(() => cluster().workers(2).spares(1).strategy("auto").spec(), /spares\(1\) take a lost worker's place under strategies "data", "ps", "model", "pipeline", "hybrid"; under strategy "auto" a lost worker fails the fit/);
    assert.throws(() => cluster().connect(["ws://127.0.0.1:7071"]).token("t0123456789abcdef0123").spares(1).strategy("data", { elastic: { minWorkers: 1 } }).spec(), /spares\(1\) starts local workers beside local ones; this cluster's workers run elsewhere/);
  });

  test("replace is refused for connect()'s workers, which the cluster cannot start", () => {
    assert.throws(() => cluster().connect(["ws://127.0.0.1:7071", "ws://127.0.0.1:7072"]).token("t0123456789abcdef0123").strategy("data", { elastic: { minWorkers: 1, replace: true } }).spec(), /elastic: replace starts a local worker, or takes the next that joins, but connect\(\)'s workers run elsewhere/);
  });

  test("below minWorkers the fit fails with the loss that took it there", async () => {
    const c = await cluster().workers(2).strategy("data", { elastic: { minWorkers: 2 } }).timeouts({ stepMs: 30_000 }).heartbeat(TEST_HEARTBEAT).backend("cpu").launch();
    try {
      const err = await c.fit(smallClassifier(6, 3), ds, { ...options, onStep: (s) => void (s.step === 4 && c.kill(0)) }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof WorkerLostError, String(err));
      assert.match((err as Error).message, /worker rank 0 .*exited \(killed by SIGKILL\).*; 1 worker\(s\) remain, fewer than elastic minWorkers 2/);
    } finally {
      await c.close();
    }
  });

  test("a worker added as the fit ends is stopped and add() says so; the cluster lists the lost worker as gone", async () => {
    const c = await cluster().workers(2).strategy("data", { elastic: { minWorkers: 1 } }).timeouts({ stepMs: 30_000 }).heartbeat(TEST_HEARTBEAT).backend("cpu").launch();
    try {
      let late: Promise<number> | undefined;
      const run = await c.fit(smallClassifier(6, 3), ds, { ...options, onStep: (s) => void (s.step === 2 && c.kill(1), s.step === 19 && !late && (late = c.add())) });
      assert.equal(run.membership.length, 1);
      await assert.rejects(late!, (e: unknown) => e instanceof StateError && /the fit ended before the new worker \(rank 2\) was ready; it was stopped/.test(e.message));
      const table = String(c);
      assert.match(table, /^meshtrain cluster: 1 worker\(s\) \(1 more left during a fit\)/);
      assert.match(table, /rank 1 .* left during a fit: worker rank 1 .*exited \(killed by SIGKILL\)/);
      assert.doesNotMatch(table, /rank 2/, "the worker that came too late is not the cluster's");
    } finally {
      await c.close();
    }
  });

  test("add() outside an elastic fit says so", async () => {
    const c = await cluster().workers(1).backend("cpu").launch();
    try {
      await assert.rejects(c.add(), /add\(\) joins a worker to a running elastic fit; none is running/);
    } finally {
      await c.close();
    }
  });
});

describe("elastic sync parameter servers", () => {
  test("a frozen worker's slice of the step it froze in is computed by another and pushed as its own, then the step is split among the rest; a second loss goes on with one; equal to model.fit", async (t) => {
    const c = await cluster().workers(3).ps(2).strategy("ps", { mode: "sync", elastic: { minWorkers: 1 } }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    const frozen = c.workers[1]!.info.pid;
    try {
      assert.match(c.plan(smallClassifier(6, 3), { batchSize: 24 }).explain(), /elastic: a lost worker's slice of the step it was lost in is computed by another worker on the same parameters and pushed as its own, then each step is split among the rest, while at least 1 remain/);
      const model = smallClassifier(6, 3);
      // Step 4 is sent to a worker frozen after step 3: the others answer it, the heartbeat calls it lost.
      const run = await c.fit(model, ds, { ...options, onStep: (s) => void (s.step === 3 && process.kill(frozen, "SIGSTOP"), s.step === 12 && c.kill(2)) });
      const d = run.departures;
      t.diagnostic(d.map((x) => `rank ${x.rank} left at step ${x.step}, requeued ${x.requeued}`).join("; "));
      assert.deepEqual(d.map((x) => [x.rank, x.step]), [[1, 4], [2, 13]]);
      assert.equal(d[0]!.requeued, 1, "the frozen worker's slice of step 4 was computed by another");
      assert.match(d[0]!.cause, new RegExp(`worker rank 1 .* was silent for \\d+ ms`));
      assert.deepEqual(run.history.map((s) => s.step), Array.from({ length: 20 }, (_, i) => i), "each step recorded once");
      assert.deepEqual(run.history[4]!.workers.map((w) => w.rank), [0, 0, 2], "step 4: rank 0 computed its own slice and rank 1's");
      assert.ok(run.history.slice(5, 12).every((s) => s.workers.map((w) => w.rank).join() === "0,2"), "steps 5-11 split between ranks 0 and 2");
      assert.ok(run.history.slice(14).every((s) => s.workers.map((w) => w.rank).join() === "0"), "the last steps ran on rank 0 alone");
      assert.deepEqual(run.serverVersions, [20, 20], "each server applied every step once");
      assert.ok(!isAlive(frozen), "the frozen worker was fenced (killed) when the fit went on without it");
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      if (isAlive(frozen)) process.kill(frozen, "SIGKILL");
      await c.close();
    }
  });

  test("elastic with a spare: a killed worker's slice is computed by another, then the spare takes its rank at the next step (the model alone: the servers hold the rest); equal to model.fit", async (t) => {
    const c = await cluster().workers(2).ps(1).spares(1).strategy("ps", { mode: "sync", elastic: { minWorkers: 1 } }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ps-elastic-spare-"));
    try {
      const model = smallClassifier(6, 3);
      const killed = c.workers[1]!.info.pid;
      const spare = c.idleSpares[0]!.info.pid;
      const run = await c.fit(model, ds, { ...options, checkpoint: { dir, every: 8 }, onStep: (s) => void (s.step === 5 && c.kill(1)) });
      const m = run.membership;
      t.diagnostic(m.map((x) => `rank ${x.rank} ${x.change} at step ${x.step}`).join("; "));
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.workers]), [["left", 1, 1], ["joined", 1, 2]]);
      // Lost in a step (its slice computed by another), the spare in from the next; lost between steps, in from that one.
      assert.ok(m[1]!.step - m[0]!.step <= 1, "the spare took the rank at the next step boundary");
      assert.equal(c.workers[1]!.info.pid, spare, "the spare's own process took rank 1");
      assert.notEqual(spare, killed);
      assert.deepEqual(run.history.map((s) => s.step), Array.from({ length: 20 }, (_, i) => i));
      assert.ok(run.history.slice(-5).every((s) => s.workers.map((w) => w.rank).join() === "0,1"), "the last steps ran on two workers again");
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await c.close();
    }
  });

  test("a killed server's place is taken by a spare, every server and worker loaded from the fit's last checkpoint and the steps since run again; each step recorded once; equal to model.fit", async (t) => {
    const c = await cluster().workers(2).ps(2).spares(1).strategy("ps", { mode: "sync" }).timeouts({ stepMs: 60_000 }).heartbeat(TEST_HEARTBEAT).launch();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-ps-spare-"));
    try {
      const model = smallClassifier(6, 3);
      const seen: number[] = [];
      const server = c.parameterServers[1]!.info.pid;
      const run = await c.fit(model, ds, { ...options, checkpoint: { dir, every: 4 }, onStep: (s) => void (seen.push(s.step), s.step === 9 && process.kill(server, "SIGKILL")) });
      const m = run.membership;
      t.diagnostic(m.map((x) => `${x.server ? "server" : "rank"} ${x.rank} ${x.change} at step ${x.step}`).join("; "));
      assert.deepEqual(m.map((x) => [x.change, x.rank, x.server, x.step]), [["left", 1, true, 8], ["joined", 1, true, 8]]);
      assert.match(m[0]!.cause!, /parameter server 1 .* exited \(killed by SIGKILL\)/);
      assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => i), "onStep saw each step once");
      assert.deepEqual(run.history.map((s) => s.step), Array.from({ length: 20 }, (_, i) => i));
      assert.deepEqual(run.serverVersions, [20, 20]);
      assert.equal(c.idleSpares.length, 0);
      assert.notEqual(c.parameterServers[1]!.info.pid, server, "a spare serves as server 1");
      const diff = maxRelativeDifference(model, await reference(ds));
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await c.close();
    }
  });

  test("elastic is refused for async servers and above the workers there are", () => {
    assert.throws(() => cluster().workers(2).ps(1).strategy("ps", { mode: "async", elastic: { minWorkers: 1 } }).spec(), /strategy\("ps", \{ elastic \}\) is for mode "sync"; async parameter servers already go on without a lost worker/);
    assert.throws(() => cluster().workers(2).ps(1).strategy("ps", { mode: "sync", elastic: { minWorkers: 3 } }).spec(), /elastic: minWorkers 3 is more than the 2 worker\(s\) the cluster starts with/);
  });
});
