import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { encodeFrame } from "../../sdk/protocol/frame";
import { MessageSchema } from "../../sdk/protocol/messages";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { offerHandshake } from "../../sdk/transport/handshake";
import type { Link } from "../../sdk/transport/link";
import { dial } from "../../sdk/transport/ws-endpoint";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { isAlive, startCliWorker, waitFor } from "../helpers/processes";
import { createOptimizer } from "../../sdk/model/optimizers";

/**
 * Thousands of random and mutated frames, text and binary, sent to a live worker by an
 * authenticated driver: the worker answers every invalid control message with an error (or
 * drops a frame it cannot attribute), keeps serving, and afterwards trains exactly as before.
 */

tf.enableProdMode();
const TOKEN = "fuzz-test-token-0123456789abcdef";
const v = PROTOCOL_VERSION;

const VALID: Array<Record<string, unknown>> = [
  { type: "probe", v, id: 1, attachments: [] },
  { type: "digest", v, id: 2 },
  { type: "fetchWeights", v, id: 3 },
  { type: "release", v, id: 4 },
  { type: "step", v, id: 5, step: 0, epoch: 0, weight: 0.5, attachments: [] },
  { type: "applied", v, id: 6, pushes: [{ rank: 0, clock: 0 }] },
  { type: "configure", v, id: 7, rank: 0, worldSize: 1, ring: [0], addresses: ["ws://127.0.0.1:9"], chunkElements: 1024, connectTimeoutMs: 500, stepTimeoutMs: 500 },
  { type: "load", v, id: 8, topology: { class_name: "Sequential", config: { layers: [] } }, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "meanSquaredError", attachments: [] },
  { type: "pull", v, id: 9, rank: 0 },
  { type: "shutdown", v },
];

/** One mutation of a valid message, as the text that goes on the wire. */
const mutated: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...VALID), fc.nat(), fc.integer({ min: 0, max: 6 }), fc.jsonValue({ maxDepth: 2 }), fc.string({ maxLength: 12 }))
  .map(([msg, n, op, value, key]) => {
    const m: Record<string, unknown> = JSON.parse(JSON.stringify(msg)) as Record<string, unknown>;
    const keys = Object.keys(m);
    const k = keys[n % keys.length]!;
    const text = JSON.stringify(m);
    switch (op) {
      case 0:
        delete m[k];
        return JSON.stringify(m);
      case 1:
        m[k] = value;
        return JSON.stringify(m);
      case 2:
        m[key || "extra"] = value;
        return JSON.stringify(m);
      case 3:
        m.type = key;
        return JSON.stringify(m);
      case 4:
        return text.slice(0, n % text.length);
      case 5: {
        const i = n % text.length;
        return text.slice(0, i) + String.fromCharCode(32 + (n % 90)) + text.slice(i + 1);
      }
      default:
        m.v = n % 3;
        return JSON.stringify(m);
    }
  });
const randomText: fc.Arbitrary<string> = fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ maxLength: 200 }));
const randomBinary: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  fc.tuple(fc.nat(40), fc.nat(255), fc.float32Array({ maxLength: 16 })).map(([at, byte, values]) => {
    const data = Float32Array.from(values);
    const frame = encodeFrame({ kind: "attachment", dtype: "float32", seq: 1, tensor: 0, offset: 0, length: data.length, total: data.length }, data);
    if (at < frame.length) frame[at] = byte;
    return frame;
  }),
);

function isInvalid(text: string): boolean {
  try {
    const raw = JSON.parse(text) as { v?: unknown } | null;
    if (raw?.v !== PROTOCOL_VERSION) return true;
    return !MessageSchema.safeParse(raw).success;
  } catch {
    return true;
  }
}

async function driverLink(url: string, replies: Array<Record<string, unknown>>): Promise<{ link: Link; closed: () => boolean }> {
  const link = await dial(url, { maxFrameBytes: 1 << 24, timeoutMs: 5000 });
  await offerHandshake(link, { token: TOKEN, timeoutMs: 5000, role: "driver", who: "worker" });
  let closed = false;
  link.setHandlers({
    text: (t) => replies.push(JSON.parse(t) as Record<string, unknown>),
    binary: () => undefined,
    close: () => (closed = true),
    pong: () => undefined,
  });
  return { link, closed: () => closed };
}

test("thousands of random and mutated frames: every invalid one is answered, the worker keeps serving and still trains exactly", { timeout: 180_000 }, async (t) => {
  const w = await startCliWorker(TOKEN);
  try {
    const replies: Array<Record<string, unknown>> = [];
    let d = await driverLink(w.url, replies);
    d.link.sendText(JSON.stringify({ type: "join", v, id: 100, session: "fuzz", backend: "cpu", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10_000, heartbeatIdleTimeoutMs: 600_000 }));
    await waitFor("joined", () => replies.some((r) => r.type === "joined"), 30_000);
    const texts = fc.sample(fc.oneof(mutated, mutated, randomText), { numRuns: 3000, seed: 7 });
    const binaries = fc.sample(randomBinary, { numRuns: 1000, seed: 8 });
    let invalid = 0;
    let reconnects = 0;
    for (let i = 0; i < texts.length; i++) {
      if (d.closed()) {
        // A frame the worker took as a reason to end the session (e.g. a valid release of it): go on with a new one.
        reconnects++;
        await new Promise((r) => setTimeout(r, 300));
        d = await driverLink(w.url, replies);
        d.link.sendText(JSON.stringify({ type: "join", v, id: 100, session: `fuzz-${i}`, backend: "cpu", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10_000, heartbeatIdleTimeoutMs: 600_000 }));
      }
      d.link.sendText(texts[i]!);
      if (isInvalid(texts[i]!)) invalid++;
      if (i % 3 === 0) void d.link.sendBinary(binaries[i / 3]!).catch(() => undefined);
      if (i % 200 === 0) await new Promise((r) => setImmediate(r));
    }
    d.link.sendText(JSON.stringify({ type: "probe", v, id: 4242, attachments: [] }));
    await waitFor("the last probe's answer", () => replies.some((r) => r.type === "probed" && r.re === 4242), 60_000);
    const errors = replies.filter((r) => r.type === "error").length;
    t.diagnostic(`${texts.length} text frames (${invalid} invalid) and ${binaries.length} binary frames sent; ${errors} error replies; ${reconnects} reconnects`);
    assert.ok(errors >= invalid, `${errors} error replies for ${invalid} invalid text frames`);
    assert.ok(isAlive(w.child.pid!), "the worker is still running");
    d.link.close();

    // Nothing it accepted is corrupted: it trains to model.fit's result.
    await waitFor("the fuzzing session to end", () => d.closed(), 10_000);
    const c = await cluster().connect([w.url]).token(TOKEN).backend("cpu").launch();
    try {
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 64, seed: 2 });
      const a = smallClassifier(6, 3);
      const b = smallClassifier(6, 3);
      await c.fit(a, ds, { epochs: 2, batchSize: 16, shuffle: false });
      b.compile({ optimizer: createOptimizer({ name: "sgd", learningRate: 0.01 }), loss: "categoricalCrossentropy" });
      const { x, y } = ds.gather(null, 0, ds.size);
      await b.fit(tf.tensor(x.data, [...x.shape]), tf.tensor(y.data, [...y.shape]), { epochs: 2, batchSize: 16, shuffle: false, verbose: 0 });
      assert.ok(maxRelativeDifference(a, b) < 1e-4);
    } finally {
      await c.close();
    }
    assert.ok(!w.output().includes(TOKEN), "the token never appears in the worker's logs");
  } finally {
    await w.stop();
  }
});

test("failed handshakes are logged and rate-limited per host, without the token", { timeout: 60_000 }, async () => {
  const w = await startCliWorker(TOKEN);
  try {
    for (let i = 0; i < 5; i++) {
      await assert.rejects(cluster().connect([w.url]).token("the-wrong-token-0123456789").timeouts({ connectMs: 3000 }).launch());
    }
    await waitFor("the ban to be logged", () => /refusing every connection from 127\.0\.0\.1 for 60 s: 5 failed handshakes within 60 s/.test(w.output()), 5000);
    // Now even the right token is refused from this host, without a challenge.
    await assert.rejects(cluster().connect([w.url]).token(TOKEN).timeouts({ connectMs: 3000 }).launch());
    assert.equal(w.output().match(/refused a connection from/g)?.length, 5, "each failed handshake logged once");
    assert.ok(!w.output().includes(TOKEN) && !w.output().includes("the-wrong-token"), "no token in the logs");
  } finally {
    await w.stop();
  }
});
