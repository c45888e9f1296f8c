import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as net from "node:net";
import { test } from "node:test";
import fc from "fast-check";
import { FORMAT_CODE, roundTo, type Compression, type WireFormat } from "../../sdk/protocol/wire-formats";
import { NativeRing } from "../../sdk/collectives/native-ring";
import { AuthError, CollectiveError, ProtocolError, TimeoutError } from "../../sdk/errors/errors";
import { inProcessRing } from "../helpers/in-process-ring";
import { addon, dialAsPeer, nativeRings, opHeader, TOKEN } from "../helpers/native-ring";

/**
 * The native data plane over real TCP on 127.0.0.1: its sums against the WebSocket path's ring
 * (the same additions in the same order, so the same bits), its handshake against a JavaScript
 * implementation of the protocol, and every kind of bad peer: wrong token, wrong rank, garbage
 * before and after authentication, a peer out of step, one that hangs up, one that goes silent.
 */

const a = addon();

test("sums equal the WebSocket path's ring bit for bit, for any length, ring size and chunk", async () => {
  for (const [n, chunk] of [[2, 1], [2, 256], [3, 7], [3, 1000]] as const) {
    const rings = await nativeRings(n, chunk);
    let seq = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 2 ** 31 - 1 }), async (length, seed) => {
          const inputs = Array.from({ length: n }, (_, p) => Float32Array.from({ length }, (_, i) => Math.sin(seed + p * 7919 + i * 0.37) * 10 ** ((i % 7) - 3)));
          const native = inputs.map((x) => x.slice());
          const js = inputs.map((x) => x.slice());
          const s = seq++;
          await Promise.all(rings.map((r, p) => r.run(native[p]!, s, 10_000)));
          const reference = inProcessRing(n, chunk).rings;
          await Promise.all(reference.map((r, p) => r.run(js[p]!, 0, 10_000)));
          for (let p = 0; p < n; p++) {
            assert.deepEqual(Buffer.from(native[p]!.buffer), Buffer.from(js[p]!.buffer), `position ${p} of ${n}, length ${length}, chunk ${chunk}`);
          }
          for (let i = 0; i < length; i += 97) {
            const sum = inputs.reduce((acc, x) => acc + x[i]!, 0);
            const magnitude = inputs.reduce((acc, x) => acc + Math.abs(x[i]!), 0);
            assert.ok(Math.abs(native[0]![i]! - sum) <= 1e-6 * magnitude, `element ${i}: ${native[0]![i]} vs ${sum}`);
          }
        }),
        { numRuns: 12 },
      );
    } finally {
      for (const r of rings) r.fail(new CollectiveError("test over"));
    }
  }
});

test("compressed sums (fp16, bf16) equal the WebSocket path's bit for bit, on every position, within the format's rounding", async () => {
  for (const [n, chunk] of [[2, 1], [2, 300], [3, 7]] as const) {
    const rings = await nativeRings(n, chunk);
    let seq = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 3000 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom<Compression>("fp16", "bf16"), fc.integer({ min: 0, max: 2 ** 31 - 1 }), async (length, share, compression, seed) => {
          const packed = Math.round(share * length);
          const inputs = Array.from({ length: n }, (_, p) => Float32Array.from({ length }, (_, i) => Math.sin(seed + p * 7919 + i * 0.37) * 10 ** ((i % 9) - 6)));
          const native = inputs.map((x) => x.slice());
          const js = inputs.map((x) => x.slice());
          const s = seq++;
          await Promise.all(rings.map((r, p) => r.run(native[p]!, s, 10_000, { compression, packed })));
          const reference = inProcessRing(n, chunk).rings;
          await Promise.all(reference.map((r, p) => r.run(js[p]!, 0, 10_000, { compression, packed })));
          for (let p = 0; p < n; p++) {
            assert.deepEqual(Buffer.from(native[p]!.buffer), Buffer.from(js[p]!.buffer), `position ${p} of ${n}, ${compression}, ${packed} of ${length} packed, chunk ${chunk}`);
            assert.deepEqual(Buffer.from(native[p]!.buffer), Buffer.from(native[0]!.buffer), `position ${p} differs from position 0`);
          }
          // Each hop rounds a partial sum once, and the owner once more: n roundings at most.
          const unit = compression === "fp16" ? 2 ** -11 : 2 ** -8;
          const tiny = compression === "fp16" ? 2 ** -24 : 0;
          for (let i = 0; i < length; i += 13) {
            const sum = inputs.reduce((acc, x) => acc + x[i]!, 0);
            const magnitude = inputs.reduce((acc, x) => acc + Math.abs(x[i]!), 0);
            const bound = i < packed ? n * (unit * magnitude + tiny) : 1e-6 * magnitude;
            assert.ok(Math.abs(native[0]![i]! - sum) <= bound, `element ${i} (${i < packed ? compression : "float32"}): ${native[0]![i]} vs ${sum}`);
            if (i < packed) assert.equal(roundTo(FORMAT_CODE[compression], native[0]![i]!), native[0]![i]!, `element ${i} is a ${compression} value`);
          }
        }),
        { numRuns: 12 },
      );
    } finally {
      for (const r of rings) r.fail(new CollectiveError("test over"));
    }
  }
});

/** 16 MiB of float32 on 3 positions, summed: the bytes all positions sent. */
async function bytesOfBigSum(wire?: WireFormat): Promise<number> {
  const rings = await nativeRings(3, 262144);
  try {
    const data = [0, 1, 2].map((p) => new Float32Array(4 * 1024 * 1024).fill(p + 1));
    const stats = await Promise.all(rings.map((r, p) => r.run(data[p]!, 0, 30_000, wire)));
    for (const d of data) assert.ok(d.every((v) => v === 6));
    return stats.reduce((acc, s) => acc + s.bytesSent, 0);
  } finally {
    for (const r of rings) r.fail(new CollectiveError("test over"));
  }
}

test("a compressed all-reduce sends half the bytes", async () => {
  assert.equal(await bytesOfBigSum({ compression: "bf16", packed: 4 * 1024 * 1024 }), 2 * 2 * 8 * 1024 * 1024 + 3 * 32);
});

test("a big all-reduce (16 MiB) on 3 positions sums every element", async () => {
  // Every ring step moves every segment once: 2(N-1) x the array's bytes in all, plus a 32-byte header per position.
  assert.equal(await bytesOfBigSum(), 2 * 2 * 16 * 1024 * 1024 + 3 * 32);
});

test("the handshake matches its description: a JavaScript peer is welcomed, and proves the server too", async () => {
  const l = a.dataListen("127.0.0.1");
  try {
    const accepted = a.dataAccept(l.fd, TOKEN, 4, 5000, "rank 4");
    const { socket, verdict } = await dialAsPeer(l.port, TOKEN, 4);
    assert.equal(verdict, 0);
    a.dataClose(await accepted);
    socket.destroy();
  } finally {
    a.dataClose(l.fd);
  }
});

test("a wrong token, a wrong rank and garbage are refused, and the listener waits on for the right peer", async () => {
  const l = a.dataListen("127.0.0.1");
  try {
    const accepted = a.dataAccept(l.fd, TOKEN, 1, 10_000, "rank 1");
    assert.equal((await dialAsPeer(l.port, "some-other-token-0123456789", 1)).verdict, 1);
    assert.equal((await dialAsPeer(l.port, TOKEN, 2)).verdict, 2);
    await assert.rejects(
      a.dataDial("127.0.0.1", l.port, "some-other-token-0123456789", 1, 5000, "rank 0"),
      (err: { code?: string; message?: string }) => err.code === "auth" && /rank 0 refused the cluster token/.test(err.message ?? ""),
    );
    for (const bytes of [randomBytes(76), randomBytes(3), Buffer.from("GET / HTTP/1.1\r\nHost: x\r\n\r\n".padEnd(76, " "))]) {
      await new Promise<void>((resolve) => {
        const s: net.Socket = net.connect(l.port, "127.0.0.1", () => s.end(bytes));
        s.resume();
        s.on("close", () => resolve());
        s.on("error", () => resolve());
      });
    }
    const fd = await a.dataDial("127.0.0.1", l.port, TOKEN, 1, 5000, "rank 0");
    a.dataClose(fd);
    a.dataClose(await accepted);
  } finally {
    a.dataClose(l.fd);
  }
});

test("waiting for a peer that never connects times out naming it and what was refused", async () => {
  const l = a.dataListen("127.0.0.1");
  try {
    const accepted = a.dataAccept(l.fd, TOKEN, 3, 600, "rank 3 (127.0.0.1:1234)");
    await dialAsPeer(l.port, "some-other-token-0123456789", 3);
    await assert.rejects(accepted, (err: { code?: string; message?: string }) => err.code === "timeout" && /waited 600 ms for rank 3 \(127\.0\.0\.1:1234\).*wrong token/.test(err.message ?? ""));
  } finally {
    a.dataClose(l.fd);
  }
});

/** Position 0 of a 2-ring whose neighbour is a JavaScript peer: `prev` writes to it, `next` reads from it. */
async function ringWithFakePeer(): Promise<{ ring: NativeRing; prev: net.Socket; next: net.Socket }> {
  const l = a.dataListen("127.0.0.1");
  try {
    const prevFd = a.dataAccept(l.fd, TOKEN, 1, 5000, "rank 1");
    const prev = (await dialAsPeer(l.port, TOKEN, 1)).socket;
    const nextFd = a.dataAccept(l.fd, TOKEN, 1, 5000, "rank 1");
    const next = (await dialAsPeer(l.port, TOKEN, 1)).socket;
    next.resume();
    const ring = new NativeRing(a, { prevFd: await prevFd, nextFd: await nextFd, prevName: "rank 1 (fake)", nextName: "rank 1 (fake)", position: 0, size: 2, chunkElements: 256 });
    return { ring, prev, next };
  } finally {
    a.dataClose(l.fd);
  }
}

test("after authentication, a peer out of step or sending garbage fails the operation with a typed error", async () => {
  const cases: Array<[Buffer, RegExp]> = [
    [randomBytes(32), /rank 1 \(fake\) sent bytes that are not an all-reduce frame/],
    [opHeader(5, 8), /rank 1 \(fake\) is at all-reduce 5 where this position is at 0/],
    [opHeader(0, 7), /all-reduces 7 elements where this position has 8: the replicas' gradients differ in size/],
    [opHeader(0, 8, 1, 8), /sends 8 elements as fp16 where this position sends 0 as float32: the replicas' compression differs/],
  ];
  for (const [bytes, message] of cases) {
    const { ring, prev, next } = await ringWithFakePeer();
    prev.write(bytes);
    await assert.rejects(ring.run(new Float32Array(8), 0, 5000), (err) => err instanceof ProtocolError && message.test(err.message));
    ring.fail(new CollectiveError("test over"));
    prev.destroy();
    next.destroy();
  }
});

test("a peer that hangs up, goes silent, or is failed by the heartbeats ends the operation, naming it", async () => {
  {
    const { ring, prev, next } = await ringWithFakePeer();
    prev.end(opHeader(0, 1000));
    await assert.rejects(ring.run(new Float32Array(1000), 0, 5000), (err) => err instanceof CollectiveError && /rank 1 \(fake\) closed the data link during all-reduce 0/.test(err.message));
    prev.destroy();
    next.destroy();
    // Once failed, it stays failed: later operations are refused at once.
    await assert.rejects(ring.run(new Float32Array(1000), 1, 5000), CollectiveError);
  }
  {
    const { ring, prev, next } = await ringWithFakePeer();
    prev.write(opHeader(0, 1000));
    await assert.rejects(ring.run(new Float32Array(1000), 0, 300), (err) => err instanceof TimeoutError && /position 0 waited 300 ms for data from rank 1 \(fake\)/.test(err.message));
    ring.fail(new CollectiveError("test over"));
    prev.destroy();
    next.destroy();
  }
  {
    const { ring, prev, next } = await ringWithFakePeer();
    const running = ring.run(new Float32Array(1000), 0, 60_000);
    setTimeout(() => ring.fail(new AuthError("the heartbeats say rank 1 is gone")), 100);
    const started = performance.now();
    await assert.rejects(running, (err) => err instanceof AuthError && /heartbeats say rank 1 is gone/.test(err.message));
    assert.ok(performance.now() - started < 30_000, "fail() woke the native thread rather than the timeout");
    prev.destroy();
    next.destroy();
  }
});

test("fuzz: any bytes from an authenticated peer end in a typed error or a sum, never a crash", async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 200 }), fc.boolean(), fc.boolean(), async (bytes, withHeader, compressed) => {
      const { ring, prev, next } = await ringWithFakePeer();
      // Compressed: 9 of the 16 values as fp16, so frames mix 2- and 4-byte values.
      prev.end(Buffer.concat([withHeader ? opHeader(0, 16, compressed ? 1 : 0, compressed ? 9 : 0) : Buffer.alloc(0), Buffer.from(bytes)]));
      const outcome = await ring.run(new Float32Array(16), 0, 2000, compressed ? { compression: "fp16", packed: 9 } : undefined).then(
        () => "summed",
        (err: unknown) => err,
      );
      if (outcome !== "summed") assert.ok(outcome instanceof ProtocolError || outcome instanceof CollectiveError || outcome instanceof TimeoutError, String(outcome));
      ring.fail(new CollectiveError("test over"));
      prev.destroy();
      next.destroy();
    }),
    { numRuns: 40 },
  );
});
