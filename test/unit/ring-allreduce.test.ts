import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { chunkOffsets, segmentBounds, shardBounds } from "../../sdk/collectives/segments";
import { CollectiveError, TimeoutError } from "../../sdk/errors/errors";
import { inProcessRing } from "../helpers/in-process-ring";

test("segments partition any length evenly", () => {
  fc.assert(
    fc.property(fc.nat(5000), fc.integer({ min: 1, max: 16 }), (len, n) => {
      let next = 0;
      for (let i = 0; i < n; i++) {
        const [s, e] = segmentBounds(len, n, i);
        assert.equal(s, next);
        assert.ok(e - s === Math.floor(len / n) || e - s === Math.ceil(len / n));
        next = e;
      }
      assert.equal(next, len);
    }),
  );
  assert.deepEqual(chunkOffsets(3, 10, 3), [3, 6, 9]);
});

test("ring all-reduce equals a plain sum for any length and N = 1..4, identical on every rank", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 0, max: 3000 }),
      fc.integer({ min: 1, max: 700 }),
      fc.integer(),
      async (n, length, chunk, seed) => {
        let s = seed >>> 0;
        const rand = (): number => {
          s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
          return s / 2 ** 32 - 0.5;
        };
        const inputs = Array.from({ length: n }, () => Float32Array.from({ length }, () => rand() * 100));
        const expected = Array.from({ length }, (_, i) => inputs.reduce((a, x) => a + x[i]!, 0));
        const { rings } = inProcessRing(n, chunk);
        const buffers = inputs.map((x) => Float32Array.from(x));
        await Promise.all(rings.map((r, p) => r.run(buffers[p]!, 0, 5000)));
        for (let p = 0; p < n; p++) {
          assert.deepEqual(Buffer.from(buffers[p]!.buffer), Buffer.from(buffers[0]!.buffer), `rank ${p} differs from rank 0`);
        }
        for (let i = 0; i < length; i++) {
          assert.ok(Math.abs(buffers[0]![i]! - expected[i]!) <= 1e-4 * Math.max(1, Math.abs(expected[i]!)), `element ${i}`);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test("ranks may enter late, and consecutive operations keep their data apart", async () => {
  const n = 3;
  const { rings } = inProcessRing(n, 4);
  for (let seq = 0; seq < 4; seq++) {
    const buffers = Array.from({ length: n }, (_, p) => Float32Array.from({ length: 37 }, (_, i) => (p + 1) * (i + seq)));
    const runs = rings.map(
      (r, p) => new Promise<void>((resolve, reject) => setTimeout(() => r.run(buffers[p]!, seq, 5000).then(() => resolve(), reject), p === 1 ? 15 : 0)),
    );
    await Promise.all(runs);
    for (const b of buffers) assert.deepEqual(Array.from(b), Array.from({ length: 37 }, (_, i) => 6 * (i + seq)));
  }
});

test("a cut link fails the operation with CollectiveError naming the neighbour", async () => {
  const { rings, cut } = inProcessRing(3, 2);
  const buffers = rings.map(() => new Float32Array(50).fill(1));
  const runs = rings.map((r, p) => (p === 2 ? new Promise<never>(() => undefined) : r.run(buffers[p]!, 0, 300)));
  cut(2);
  await assert.rejects(runs[0]!, (e: unknown) => e instanceof CollectiveError && /rank 2/.test(e.message));
  // Rank 1 only hears from rank 0, which stopped: it gives up at its own timeout, naming rank 0.
  await assert.rejects(runs[1]!, (e: unknown) => e instanceof TimeoutError && /from rank 0/.test(e.message));
  await assert.rejects(rings[0]!.run(new Float32Array(5), 1, 100), CollectiveError);
});

test("a neighbour that never sends makes a TimeoutError that names it", async () => {
  const { rings } = inProcessRing(2, 8);
  await assert.rejects(
    rings[0]!.run(new Float32Array(20), 0, 80),
    (e: unknown) => e instanceof TimeoutError && /waited 80 ms for data from rank 1/.test(e.message),
  );
});

test("a reduce-scatter leaves each position its shard's sum, the all-reduce's bits; an all-gather of the shards gives every position all of them", async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 2, max: 4 }), fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 1, max: 300 }), fc.boolean(), async (n, length, chunk, half) => {
      const inputs = Array.from({ length: n }, (_, p) => Float32Array.from({ length }, (_, i) => Math.sin(i * 7.3 + p * 1.1) * 50));
      const wire = half ? { compression: "fp16" as const, packed: Math.floor(length / 2) } : undefined;
      const whole = inputs.map((x) => Float32Array.from(x));
      const a = inProcessRing(n, chunk);
      await Promise.all(a.rings.map((r, p) => r.run(whole[p]!, 0, 5000, wire)));
      const split = inputs.map((x) => Float32Array.from(x));
      const b = inProcessRing(n, chunk);
      await Promise.all(b.rings.map((r, p) => r.run(split[p]!, 0, 5000, wire, "reduceScatter")));
      // Each shard's sum is summed in the same order, and 16-bit values rounded the same way, as in the all-reduce.
      const shard = (p: number): [number, number] => shardBounds(length, n, p);
      for (let p = 0; p < n; p++) assert.deepEqual(Array.from(split[p]!.subarray(...shard(p))), Array.from(whole[0]!.subarray(...shard(p))), `position ${p}'s shard`);
      // Every position puts garbage outside its shard: the all-gather overwrites all of it.
      for (let p = 0; p < n; p++) {
        const [s, e] = shard(p);
        split[p]!.fill(NaN, 0, s);
        split[p]!.fill(NaN, e);
      }
      await Promise.all(b.rings.map((r, p) => r.run(split[p]!, 1, 5000, undefined, "allGather")));
      for (let p = 0; p < n; p++) assert.deepEqual(Buffer.from(split[p]!.buffer), Buffer.from(whole[0]!.buffer), `position ${p} after the all-gather`);
    }),
    { numRuns: 60 },
  );
  const { rings } = inProcessRing(2, 8);
  await assert.rejects(rings[0]!.run(new Float32Array(10), 0, 1000, { compression: "fp16", packed: 4 }, "allGather"), CollectiveError);
});
