import assert from "node:assert/strict";
import { test } from "node:test";
import { Channel, type Incoming } from "../../sdk/transport/channel";
import { dial, listen } from "../../sdk/transport/ws-endpoint";
import { RecycledArrays } from "../../sdk/worker/comm/recycled-arrays";

test("a buffer given back is taken again for an array of its size, as float32 or int32, and no more are kept than the bounds", () => {
  const kept = new RecycledArrays();
  const a = new ArrayBuffer(40);
  kept.give([a, new ArrayBuffer(0)]);
  assert.equal(kept.bytes, 40);
  assert.notEqual(kept.take("float32", 9).buffer, a, "another size is a new array");
  const ints = kept.take("int32", 10);
  assert.ok(ints instanceof Int32Array);
  assert.equal(ints.buffer, a);
  assert.equal(kept.bytes, 0, "a buffer taken is no longer kept: it goes to one message only");
  assert.notEqual(kept.take("float32", 10).buffer, a);
  // Four of a size, eight sizes: the oldest size goes first.
  for (let size = 1; size <= 9; size++) kept.give(Array.from({ length: 6 }, () => new ArrayBuffer(size * 4)));
  assert.equal(kept.bytes, 4 * 4 * (2 + 3 + 4 + 5 + 6 + 7 + 8 + 9));
});

test("a channel that receives into given-back buffers, over a WebSocket lending its frames, hears every step's batch exactly, its buffers reused", async () => {
  const kept = new RecycledArrays();
  const inbox: Incoming[] = [];
  let accepted!: (c: Channel) => void;
  const worker = new Promise<Channel>((resolve) => (accepted = resolve));
  const options = { chunkElements: 1000, maxFrameBytes: 1 << 20, maxAttachmentBytes: 1 << 24, onClose: () => undefined };
  const listener = await listen({
    host: "127.0.0.1",
    port: 0,
    maxFrameBytes: 1 << 20,
    maxConnections: 2,
    onLink: (link) => {
      const ch = new Channel(link, {
        ...options,
        peerName: "the driver",
        details: {},
        onMessage: (m) => inbox.push(m),
        allocate: (dtype, n) => kept.take(dtype, n),
      });
      assert.equal(link.lendBinary!(), true);
      accepted(ch);
    },
  });
  const driver = new Channel(await dial(listener.url, { maxFrameBytes: 1 << 20, timeoutMs: 5000 }), {
    ...options,
    peerName: "worker rank 0",
    details: { rank: 0 },
    onMessage: () => undefined,
  });
  try {
    await worker;
    const seen = new Set<ArrayBufferLike>();
    let reused = 0;
    // Batches of two sizes (an epoch's last is shorter), chunked across frames of 1,000 elements.
    for (let step = 0; step < 12; step++) {
      const rows = step % 4 === 3 ? 5 : 32;
      const x = Float32Array.from({ length: rows * 97 }, (_, i) => Math.fround(Math.sin(step * 1000 + i)));
      const y = Int32Array.from({ length: rows }, (_, i) => (step * 7 + i) % 10);
      void driver.send({ type: "step", id: step, step, epoch: 0, weight: 1 }, [
        { data: x, shape: [rows, 97] },
        { data: y, shape: [rows, 1] },
      ]);
      const deadline = Date.now() + 10_000;
      while (inbox.length === 0) {
        if (Date.now() > deadline) throw new Error(`step ${step} did not arrive in 10 s`);
        await new Promise((r) => setTimeout(r, 2));
      }
      const got = inbox.shift()!;
      assert.deepEqual(got.attachments[0]!.data, x, `step ${step}'s inputs`);
      assert.deepEqual(got.attachments[1]!.data, y, `step ${step}'s targets`);
      for (const a of got.attachments) {
        if (seen.has(a.data.buffer)) reused++;
        seen.add(a.data.buffer);
      }
      // The compute thread is done with the step: its batch is given back.
      kept.give(got.attachments.map((a) => a.data.buffer as ArrayBuffer));
    }
    assert.equal(reused, 20, "after each size's first step, every batch arrived in a buffer given back");
  } finally {
    driver.close();
    await listener.close();
  }
});
