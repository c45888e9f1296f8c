import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { AuthError, cluster, datasets, ModelError, ProtocolError, StateError, WorkerLostError } from "../../sdk/index";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { offerHandshake } from "../../sdk/transport/handshake";
import type { Link } from "../../sdk/transport/link";
import { dial } from "../../sdk/transport/ws-endpoint";
import { deepClassifier, smallClassifier } from "../helpers/models";
import { isAlive, startCliWorker, waitFor } from "../helpers/processes";
import { TEST_HEARTBEAT } from "../helpers/heartbeat";

/** Faults tried against real worker processes over real WebSockets: each must end in a typed error, never a hang. */

tf.enableProdMode();
const TOKEN = "integration-test-token-0123456789";

/** A raw, authenticated driver connection that records every reply as parsed JSON. */
async function rawDriver(url: string): Promise<{ link: Link; replies: Array<Record<string, unknown>>; closed: Promise<number> }> {
  const link = await dial(url, { maxFrameBytes: 1 << 30, timeoutMs: 5000 });
  await offerHandshake(link, { token: TOKEN, timeoutMs: 5000, role: "driver", who: "worker" });
  const replies: Array<Record<string, unknown>> = [];
  const closed = new Promise<number>((resolve) =>
    link.setHandlers({
      text: (t) => replies.push(JSON.parse(t) as Record<string, unknown>),
      binary: () => undefined,
      close: (code) => resolve(code),
      pong: () => undefined,
    }),
  );
  return { link, replies, closed };
}

async function until<T>(what: string, get: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  let v: T | undefined;
  await waitFor(what, () => (v = get()) !== undefined, timeoutMs);
  return v!;
}

test("a wrong token is refused, and the worker keeps serving the right one", async () => {
  const w = await startCliWorker(TOKEN);
  try {
    await assert.rejects(cluster().connect([w.url]).token("definitely-the-wrong-token").launch(), (e: unknown) => {
      assert.ok(e instanceof AuthError, String(e));
      assert.ok(!(e as Error).message.includes(TOKEN));
      return true;
    });
    const c = await cluster().connect([w.url]).token(TOKEN).backend("cpu").launch();
    assert.equal(c.workers[0]!.info.backend, "cpu");
    await c.close();
    assert.ok(!w.output().includes(TOKEN), "the token never appears in the worker's logs");
  } finally {
    await w.stop();
  }
});

test("malformed and oversized frames are answered, and the worker keeps serving", async () => {
  const w = await startCliWorker(TOKEN, ["--max-frame-bytes", "65536"]);
  try {
    const d = await rawDriver(w.url);
    d.link.sendText("this is not json");
    d.link.sendText(JSON.stringify({ type: "join", v: PROTOCOL_VERSION, id: 1, session: "s", backend: "quantum", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10000, heartbeatIdleTimeoutMs: 600000 }));
    void d.link.sendBinary(Buffer.from("not a frame at all"));
    await waitFor("three error replies", () => d.replies.length >= 3, 10_000);
    for (const r of d.replies.slice(0, 3)) {
      assert.equal(r.type, "error");
      assert.equal((r.error as { code: string }).code, "MT_ERR_PROTOCOL");
    }
    assert.equal(d.replies[1]!.re, 1, "the reply names the request it refuses");
    // The same connection still works.
    d.link.sendText(JSON.stringify({ type: "join", v: PROTOCOL_VERSION, id: 2, session: "s", backend: "cpu", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10000, heartbeatIdleTimeoutMs: 600000 }));
    const joined = await until("joined", () => d.replies.find((r) => r.type === "joined"));
    assert.equal(joined.re, 2);
    // An oversized frame closes that connection with 1009; the worker itself goes on.
    void d.link.sendBinary(Buffer.alloc(100_000));
    assert.equal(await d.closed, 1009);
    const again = await rawDriver(w.url);
    again.link.sendText(JSON.stringify({ type: "join", v: PROTOCOL_VERSION, id: 1, session: "t", backend: "cpu", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10000, heartbeatIdleTimeoutMs: 600000 }));
    await until("joined again", () => again.replies.find((r) => r.type === "joined"));
    again.link.close();
    assert.match(w.output(), /refused a frame/);
  } finally {
    await w.stop();
  }
});

test("a second driver is told the worker is busy", async () => {
  const w = await startCliWorker(TOKEN);
  try {
    const first = await cluster().connect([w.url]).token(TOKEN).backend("cpu").launch();
    await assert.rejects(cluster().connect([w.url]).token(TOKEN).launch(), (e: unknown) => e instanceof ProtocolError && /serving another driver/.test((e as Error).message));
    await first.close();
    const second = await cluster().connect([w.url]).token(TOKEN).backend("cpu").launch();
    await second.close();
  } finally {
    await w.stop();
  }
});

test("a model the workers cannot build is a ModelError, and the cluster stays usable, waiting as between fits", async () => {
  const c = await cluster().workers(2).backend("cpu").heartbeat({ intervalMs: 200, timeoutMs: 1500, idleTimeoutMs: 20_000 }).launch();
  try {
    class Mystery extends tf.layers.Layer {
      static className = "Mystery";
      override computeOutputShape(s: tf.Shape): tf.Shape {
        return s;
      }
      override call(x: tf.Tensor | tf.Tensor[]): tf.Tensor {
        return Array.isArray(x) ? x[0]! : x;
      }
    }
    tf.serialization.registerClass(Mystery);
    const model = tf.sequential({ layers: [tf.layers.dense({ units: 3, inputShape: [4] }), new Mystery({})] });
    const ds = datasets.synthetic({ inputShape: [4], classes: 3, size: 8 });
    await assert.rejects(c.fit(model, ds, { batchSize: 4 }), (e: unknown) => e instanceof ModelError && /Mystery/.test((e as Error).message));
    assert.equal(c.state, "ready");
    // The workers hold no model after the failed load: the driver's silence is judged by the idle timeout.
    standStill(3000);
    const run = await c.fit(smallClassifier(4, 3), ds, { batchSize: 4 });
    assert.equal(run.history.length, 2);
  } finally {
    await c.close();
  }
});

test("a worker killed mid-fit is a WorkerLostError naming it; the others stop; nothing is left running", async () => {
  const c = await cluster().workers(3).backend("cpu").heartbeat(TEST_HEARTBEAT).launch();
  const pids = c.workers.map((w) => w.info.pid);
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 3000 });
  const err = await c
    .fit(smallClassifier(), ds, {
      batchSize: 6,
      epochs: 5,
      onStep: (s) => {
        if (s.step === 3) process.kill(pids[1]!, "SIGKILL");
      },
    })
    .then(
      () => assert.fail("fit should fail"),
      (e: unknown) => e,
    );
  assert.ok(err instanceof WorkerLostError, String(err));
  const e = err as WorkerLostError;
  assert.equal(e.details.rank, 1);
  assert.match(e.message, new RegExp(`worker rank 1 \\(ws://127\\.0\\.0\\.1:\\d+, pid ${pids[1]}\\) exited \\(killed by SIGKILL\\) at step \\d+`));
  assert.equal(c.state, "failed");
  await assert.rejects(c.fit(smallClassifier(), ds), (x: unknown) => x instanceof StateError && /stopped after an error/.test((x as Error).message));
  await c.close();
  for (const pid of pids) assert.ok(!isAlive(pid), `worker ${pid} is gone`);
});

test("a pipeline stage killed mid-fit is a WorkerLostError naming it, not a neighbour waiting forever", async () => {
  const c = await cluster().workers(3).strategy("pipeline", { microBatches: 2 }).heartbeat(TEST_HEARTBEAT).launch();
  const pids = c.workers.map((w) => w.info.pid);
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 3000 });
  const err = await c
    .fit(deepClassifier(6, 3), ds, {
      batchSize: 8,
      epochs: 5,
      onStep: (s) => {
        if (s.step === 3) process.kill(pids[1]!, "SIGKILL");
      },
    })
    .then(
      () => assert.fail("fit should fail"),
      (e: unknown) => e,
    );
  assert.ok(err instanceof WorkerLostError, String(err));
  assert.equal((err as WorkerLostError).details.rank, 1);
  await c.close();
  for (const pid of pids) assert.ok(!isAlive(pid), `worker ${pid} is gone`);
});

test("a frozen worker (SIGSTOP) is reported silent within twice the heartbeat timeout", async () => {
  const { timeoutMs } = TEST_HEARTBEAT;
  const c = await cluster().workers(2).backend("cpu").heartbeat(TEST_HEARTBEAT).launch();
  const pids = c.workers.map((w) => w.info.pid);
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 100_000 });
  let stoppedAt = 0;
  try {
    const err = await c
      .fit(smallClassifier(), ds, {
        batchSize: 4,
        onStep: (s) => {
          if (s.step === 2) {
            process.kill(pids[0]!, "SIGSTOP");
            stoppedAt = Date.now();
          }
        },
      })
      .then(
        () => assert.fail("fit should fail"),
        (e: unknown) => e,
      );
    const waited = Date.now() - stoppedAt;
    assert.ok(err instanceof WorkerLostError, String(err));
    assert.match((err as Error).message, new RegExp(`worker rank 0 .* was silent for \\d+ ms \\(heartbeat timeout ${timeoutMs} ms\\)`));
    // A deadline from the spec, not a speed measurement: silence must be reported, not waited out.
    assert.ok(waited < 2 * timeoutMs, `reported after ${waited} ms`);
  } finally {
    process.kill(pids[0]!, "SIGCONT");
    await c.close();
  }
  for (const pid of pids) assert.ok(!isAlive(pid));
});

function standStill(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // A synchronous cell or callback, as a notebook user writes one: this thread answers nothing.
  }
}

test("a driver that stands still between fits keeps its workers up to the idle timeout; within a fit past the heartbeat timeout they leave, and the error quotes why", async () => {
  const data = datasets.synthetic({ inputShape: [6], classes: 3 });
  const c = await cluster().workers(2).backend("cpu").heartbeat({ intervalMs: 200, timeoutMs: 1500, idleTimeoutMs: 20_000 }).launch();
  const pids = c.workers.map((w) => w.info.pid);
  try {
    // Twice the heartbeat timeout before the first fit, and again after it (the model released).
    standStill(3000);
    const run = await c.fit(smallClassifier(), data, { epochs: 1, batchSize: 16 });
    assert.ok(run.history.length > 0);
    standStill(3000);
    // Within a fit a step waits on the driver: a callback standing still past the timeout loses the workers.
    const err = await c
      .fit(smallClassifier(), data, { epochs: 2, batchSize: 16, callbacks: { onEpochEnd: async () => standStill(3000) } })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof WorkerLostError, String(err));
    // Its own stall is not held against the workers: they exited, and said why.
    assert.match(err.message, /worker rank \d \(ws:\/\/127\.0\.0\.1:\d+, pid \d+\) exited \(exit code 0\)/);
    assert.match(err.hint ?? "", /meshtrain worker: the driver was silent for \d+ ms \(heartbeat timeout 1500 ms\); exiting/);
  } finally {
    await c.close();
  }
  for (const pid of pids) assert.ok(!isAlive(pid));
});

test("a driver that stands still between fits past the idle timeout: its workers leave, and the error quotes why", async () => {
  const c = await cluster().workers(2).backend("cpu").heartbeat({ intervalMs: 200, timeoutMs: 1500, idleTimeoutMs: 3000 }).launch();
  const pids = c.workers.map((w) => w.info.pid);
  try {
    standStill(5000);
    await waitFor("the cluster to fail", () => c.state === "failed", 15_000);
    const err = await c.fit(smallClassifier(), datasets.synthetic({ inputShape: [6], classes: 3 })).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof StateError, String(err));
    const lost = err.cause;
    assert.ok(lost instanceof WorkerLostError, String(lost));
    assert.match(lost.message, /worker rank \d \(ws:\/\/127\.0\.0\.1:\d+, pid \d+\) exited \(exit code 0\)/);
    assert.match(lost.hint ?? "", /meshtrain worker: the driver was silent for \d+ ms between fits \(idle timeout 3000 ms\); exiting/);
  } finally {
    await c.close();
  }
  for (const pid of pids) assert.ok(!isAlive(pid));
});

test("close() leaves no worker process behind", async () => {
  const c = await cluster().workers(2).backend("cpu").launch();
  const pids = c.workers.map((w) => w.info.pid);
  assert.ok(pids.every(isAlive));
  await c.close();
  await c.close();
  for (const pid of pids) assert.ok(!isAlive(pid), `worker ${pid} still running`);
  await assert.rejects(c.fit(smallClassifier(), datasets.synthetic({ inputShape: [6], classes: 3 })), StateError);
});

test("a killed driver leaves no worker running", async () => {
  const sdk = path.join(__dirname, "..", "..", "sdk", "index.js");
  const script = `
    const { cluster } = require(${JSON.stringify(sdk)});
    cluster().workers(2).backend("cpu").launch().then((c) => {
      console.log(JSON.stringify(c.workers.map((w) => w.info.pid)));
      setInterval(() => {}, 1000);
    });`;
  const driver = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  driver.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const pids = await until("the driver to report its workers", () => {
    const line = out.split("\n").find((l) => l.startsWith("["));
    return line ? (JSON.parse(line) as number[]) : undefined;
  }, 60_000);
  assert.equal(pids.length, 2);
  assert.ok(pids.every(isAlive));
  driver.kill("SIGKILL");
  await waitFor("orphaned workers to exit", () => !pids.some(isAlive), 15_000);
});

test("a script that ends without close() exits, and its workers with it", async () => {
  const sdk = path.join(__dirname, "..", "..", "sdk", "index.js");
  const script = `
    const tf = require("@tensorflow/tfjs");
    const { cluster, datasets } = require(${JSON.stringify(sdk)});
    (async () => {
      const c = await cluster().workers(2).backend("cpu").launch();
      console.log(JSON.stringify(c.workers.map((w) => w.info.pid)));
      const model = tf.sequential({ layers: [tf.layers.dense({ units: 3, inputShape: [6], activation: "softmax" })] });
      await c.fit(model, datasets.synthetic({ inputShape: [6], classes: 3, size: 60 }), { batchSize: 6 });
      console.log("done");
    })();`;
  const driver = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "pipe"], cwd: path.join(__dirname, "..", "..", "..") });
  let out = "";
  driver.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => driver.once("exit", resolve));
  assert.equal(code, 0, out);
  assert.match(out, /done/);
  const pids = JSON.parse(out.split("\n").find((l) => l.startsWith("["))!) as number[];
  await waitFor("the workers of a finished script to exit", () => !pids.some(isAlive), 15_000);
});
