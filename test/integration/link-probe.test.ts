import assert from "node:assert/strict";
import { test } from "node:test";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { Channel } from "../../sdk/transport/channel";
import { offerHandshake } from "../../sdk/transport/handshake";
import { dial } from "../../sdk/transport/ws-endpoint";
import { startCliWorker } from "../helpers/processes";

/**
 * The link probe as a parameter server's link is timed: a worker process sends an echoed probe's
 * attachment back, value for value, and answers a plain probe with no attachment (the plain one
 * times the link one way; the echo, a shard's trip through both processes as a pull's answer).
 */
const TOKEN = "link-probe-test-token-0123456789";

test("a probe that asks for an echo comes back with its attachment; a plain one with none", { timeout: 60_000 }, async () => {
  const w = await startCliWorker(TOKEN);
  const link = await dial(w.url, { maxFrameBytes: 1 << 24, timeoutMs: 5000 });
  try {
    await offerHandshake(link, { token: TOKEN, timeoutMs: 5000, role: "driver", who: "worker" });
    const channel = new Channel(link, {
      peerName: "the test's worker",
      details: {},
      chunkElements: 64 * 1024,
      maxFrameBytes: 1 << 24,
      maxAttachmentBytes: 1 << 26,
      onMessage: () => undefined,
      onClose: () => undefined,
    });
    const wait = { timeoutMs: 30_000, waitingFor: "a link probe" };
    await channel.request({ type: "join", session: "probe-test", backend: "cpu", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10_000 }, "joined", wait);
    // More than one frame's chunk, values that would show a chunk out of place.
    const values = Float32Array.from({ length: 300_000 }, (_, i) => Math.sin(i) * 1000 + i);
    const echoed = await channel.request({ type: "probe", echo: true }, "probed", { ...wait, attachments: [{ data: values, shape: [values.length] }] });
    assert.equal(echoed.attachments.length, 1, "the echo carries one tensor");
    assert.deepEqual(echoed.attachments[0]!.shape, [values.length]);
    assert.deepEqual(echoed.attachments[0]!.data, values, "the same values came back");
    const plain = await channel.request({ type: "probe" }, "probed", { ...wait, attachments: [{ data: values, shape: [values.length] }] });
    assert.equal(plain.attachments.length, 0, "a plain probe's answer carries nothing back");
    assert.equal(plain.msg.v, PROTOCOL_VERSION);
  } finally {
    link.close();
    await w.stop();
  }
});
