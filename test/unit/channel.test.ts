import assert from "node:assert/strict";
import { test } from "node:test";
import { FrameTooLargeError, ProtocolError, StateError, TimeoutError, WorkerLostError, type MeshtrainError } from "../../sdk/errors/errors";
import { encodeFrame } from "../../sdk/protocol/frame";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { Channel, type Incoming } from "../../sdk/transport/channel";
import { inProcessLinkPair } from "../../sdk/transport/in-process-link";
import { waitFor } from "../helpers/processes";

/** Waits until `ready()` holds (a message crossed the in-process link); a loaded machine may take more than a tick. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function pair(chunkElements = 5) {
  const [a, b] = inProcessLinkPair("driver", "worker");
  const serverInbox: Incoming[] = [];
  const refused: MeshtrainError[] = [];
  const closes: MeshtrainError[] = [];
  const driver = new Channel(a, {
    peerName: "worker rank 0",
    details: { rank: 0 },
    chunkElements,
    maxFrameBytes: 1 << 20,
    maxAttachmentBytes: 1 << 20,
    onMessage: () => undefined,
    onClose: (e) => closes.push(e),
  });
  const worker = new Channel(b, {
    peerName: "the driver",
    details: {},
    chunkElements,
    maxFrameBytes: 1 << 20,
    maxAttachmentBytes: 1 << 20,
    onMessage: (m) => serverInbox.push(m),
    onClose: (e) => closes.push(e),
    onInvalid: (e) => refused.push(e),
  });
  return { a, b, driver, worker, serverInbox, refused, closes };
}

test("requests carry chunked tensors of any size and dtype, and replies find their request", async () => {
  const { driver, worker, serverInbox } = pair(5);
  const x = { data: Float32Array.from({ length: 23 }, (_, i) => i / 3), shape: [23] };
  const y = { data: Int32Array.from([7, -8]), shape: [2, 1] };
  const empty = { data: new Float32Array(0), shape: [0, 4] };
  const reply = driver.request({ type: "step", step: 3, epoch: 0, weight: 0.25 }, "stepDone", { timeoutMs: 5000, waitingFor: "step 3", attachments: [x, empty, y] });
  await until(() => serverInbox.length > 0, "the request to arrive");
  assert.equal(serverInbox.length, 1);
  const got = serverInbox[0]!;
  assert.equal(got.msg.type, "step");
  assert.deepEqual(Array.from(got.attachments[0]!.data), Array.from(x.data));
  assert.equal(got.attachments[1]!.data.length, 0);
  assert.deepEqual(got.attachments[1]!.shape, [0, 4]);
  assert.ok(got.attachments[2]!.data instanceof Int32Array);
  assert.deepEqual(got.attachments[2]!.shape, [2, 1]);
  worker.send({ type: "stepDone", re: (got.msg as { id: number }).id, step: 3, loss: 1, computeMs: 1, commMs: 1, waitMs: 1, applyMs: 1, startedAt: 0 });
  const r = await reply;
  assert.equal(r.msg.loss, 1);
});

test("an error reply rejects the request with the rebuilt class and the worker's rank", async () => {
  const { driver, worker, serverInbox } = pair();
  const reply = driver.request({ type: "release" }, "released", { timeoutMs: 5000, waitingFor: "release" });
  await until(() => serverInbox.length > 0, "the request to arrive");
  worker.replyError((serverInbox[0]!.msg as { id: number }).id, new StateError("nothing loaded"));
  await assert.rejects(reply, (e: unknown) => e instanceof StateError && (e as StateError).details.rank === 0);
});

test("malformed frames are answered with errors and the channel keeps serving", async () => {
  const { a, driver, serverInbox, refused } = pair();
  const answers: string[] = [];
  const driverTexts: string[] = [];
  a.setHandlers({ text: (t) => driverTexts.push(t), binary: () => undefined, close: () => undefined, pong: () => undefined });
  a.sendText("{{{");
  a.sendText(JSON.stringify({ type: "release", v: PROTOCOL_VERSION, id: 5, sneaky: true }));
  a.sendText(JSON.stringify({ type: "release", v: 42, id: 6 }));
  void a.sendBinary(encodeFrame({ kind: "attachment", dtype: "float32", seq: 1, tensor: 0, offset: 0, length: 1, total: 1 }, Float32Array.of(1)));
  void a.sendBinary(Buffer.from("garbage"));
  a.sendText(JSON.stringify({ type: "step", v: PROTOCOL_VERSION, id: 7, step: 0, epoch: 0, weight: 1, attachments: [{ dtype: "float32", shape: [100000, 100000] }] }));
  // Each refusal is answered as it is read: wait for all six (a starved machine can take seconds), not a fixed while.
  await waitFor("six refusals and their answers", () => refused.length >= 6 && driverTexts.length >= 6, 10_000);
  answers.push(...driverTexts);
  assert.equal(refused.length, 6, refused.map((e) => e.summary).join("\n"));
  assert.ok(refused.every((e) => e instanceof ProtocolError));
  const parsed = answers.map((t) => JSON.parse(t) as { type: string; re?: number; error: { code: string; message: string } });
  assert.ok(parsed.every((p) => p.type === "error" && p.error.code === "MT_ERR_PROTOCOL"));
  assert.equal(parsed[1]!.re, 5);
  assert.match(parsed[1]!.error.message, /sneaky/);
  assert.match(parsed[2]!.error.message, /protocol version 42/);
  assert.match(parsed[5]!.error.message, /above the limit/);
  // Still serving: a valid message goes through.
  a.sendText(JSON.stringify({ type: "release", v: PROTOCOL_VERSION, id: 8 }));
  await waitFor("the valid message after the refusals", () => serverInbox.length >= 1, 10_000);
  assert.equal(serverInbox.length, 1);
  void driver;
});

test("a request that gets no answer times out naming what and whom it waited for", async () => {
  const { driver } = pair();
  await assert.rejects(
    driver.request({ type: "digest" }, "digestReply", { timeoutMs: 50, waitingFor: "a weights digest" }),
    (e: unknown) => e instanceof TimeoutError && /waited 50 ms for a weights digest from worker rank 0/.test(e.message) && e.details.waitingFor === "a weights digest from worker rank 0",
  );
});

test("a closed link rejects every pending request and reports the close once", async () => {
  const { b, driver, closes } = pair();
  const p = driver.request({ type: "digest" }, "digestReply", { timeoutMs: 5000, waitingFor: "digest" });
  b.close(1011, "boom");
  await assert.rejects(p, (e: unknown) => e instanceof WorkerLostError && /worker rank 0 .* closed \(code 1011: boom\)/.test(e.message));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(closes.length, 2);
  await assert.rejects(driver.request({ type: "digest" }, "digestReply", { timeoutMs: 10, waitingFor: "x" }), WorkerLostError);
});

test("heartbeats notice silence", async () => {
  const { a, driver } = pair();
  // Make the other end mute: pings go nowhere.
  a.ping = () => undefined;
  // Heartbeat timers never keep a process alive on their own; this test must.
  const keepAlive = setTimeout(() => undefined, 5000);
  const silent = await new Promise<number>((resolve) => driver.startHeartbeat(10, 60, resolve));
  clearTimeout(keepAlive);
  assert.ok(silent > 60);
});

test("a message above the frame limit is refused before it is sent, and a 1009 close says why", async () => {
  const [a, b] = inProcessLinkPair();
  const closes: MeshtrainError[] = [];
  const small = new Channel(a, {
    peerName: "worker rank 1",
    details: { rank: 1 },
    chunkElements: 16,
    maxFrameBytes: 200,
    maxAttachmentBytes: 1 << 20,
    onMessage: () => undefined,
    onClose: (e) => closes.push(e),
  });
  assert.throws(
    () => small.send({ type: "load", id: 1, role: "replica", topology: { big: "x".repeat(500) }, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "hinge", replicaBatch: 1, stepTimeoutMs: 1000 }),
    (e: unknown) => e instanceof FrameTooLargeError && /"load" message to worker rank 1 is \d+ bytes, above the 200-byte frame limit/.test((e as Error).message),
  );
  b.close(1009, "Max payload size exceeded");
  await new Promise((r) => setTimeout(r, 10));
  assert.ok(closes[0] instanceof FrameTooLargeError, String(closes[0]));
});

test("NaN and Infinity cross the wire as themselves, in records and metrics, and a string that looks like one stays a string", async () => {
  const { driver, worker, serverInbox } = pair();
  const reply = driver.request({ type: "step", step: 1, epoch: 0, weight: 1 }, "stepDone", { timeoutMs: 5000, waitingFor: "step 1" });
  await until(() => serverInbox.length > 0, "the request to arrive");
  const re = (serverInbox[0]!.msg as { id: number }).id;
  worker.send({ type: "stepDone", re, step: 1, loss: NaN, metrics: { acc: Infinity, mse: -Infinity }, nonFinite: { where: "loss" }, skipped: true, computeMs: 1, commMs: 1, waitMs: 1, applyMs: 1, startedAt: 0 });
  const r = await reply;
  assert.ok(Number.isNaN(r.msg.loss));
  assert.equal(r.msg.metrics!.acc, Infinity);
  assert.equal(r.msg.metrics!.mse, -Infinity);
  assert.equal(r.msg.skipped, true);
});

test("the wire JSON codec keeps finite numbers and strings as JSON does", async () => {
  const { fromWireJson, toWireJson } = await import("../../sdk/protocol/json");
  const value = { a: [1, -0.5, NaN, Infinity, -Infinity], s: "NaN", n: null, o: { $num: "not a number" } };
  const back = fromWireJson(toWireJson(value)) as typeof value;
  assert.deepEqual(back.a.slice(0, 2), [1, -0.5]);
  assert.ok(Number.isNaN(back.a[2]));
  assert.deepEqual(back.a.slice(3), [Infinity, -Infinity]);
  assert.equal(back.s, "NaN");
  assert.equal(back.n, null);
  assert.deepEqual(back.o, { $num: "not a number" });
  assert.equal(toWireJson({ x: 1 }), JSON.stringify({ x: 1 }));
});

test("a reply that fails its schema ends the request it answers with a ProtocolError, instead of leaving it to time out", async () => {
  const { b, driver, serverInbox } = pair();
  const reply = driver.request({ type: "digest" }, "digestReply", { timeoutMs: 60_000, waitingFor: "a digest" });
  await until(() => serverInbox.length > 0, "the request to arrive");
  const id = (serverInbox[0]!.msg as { id: number }).id;
  b.sendText(JSON.stringify({ type: "digestReply", v: PROTOCOL_VERSION, re: id, digest: "not hex" }));
  await assert.rejects(reply, (e: unknown) => e instanceof ProtocolError && /invalid message from worker rank 0: digest/.test(e.summary));
  assert.equal(driver.unanswered, 0);
});
