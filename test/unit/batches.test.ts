import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../sdk/plan/batches";

test("replica slices cover the batch and differ by at most one", () => {
  fc.assert(
    fc.property(fc.nat(10_000), fc.integer({ min: 1, max: 64 }), (count, replicas) => {
      const s = replicaSlices(count, replicas);
      assert.equal(s.length, replicas);
      assert.equal(s.reduce((a, b) => a + b, 0), count);
      assert.ok(Math.max(...s) - Math.min(...s) <= 1);
      for (let i = 1; i < s.length; i++) assert.ok(s[i]! <= s[i - 1]!);
    }),
  );
  assert.deepEqual(replicaSlices(5, 3), [2, 2, 1]);
});

test("global batches tile the epoch like model.fit, the last one shorter", () => {
  assert.equal(stepsPerEpoch(100, 32), 4);
  assert.deepEqual([0, 1, 2, 3].map((i) => globalBatch(100, 32, i)), [[0, 32], [32, 64], [64, 96], [96, 100]]);
});

test("shuffled epochs are seeded permutations, different per epoch, identical per seed", () => {
  assert.equal(epochOrder(10, false, 1, 0), null);
  const a = epochOrder(1000, true, 5, 0)!;
  const b = epochOrder(1000, true, 5, 0)!;
  const c = epochOrder(1000, true, 5, 1)!;
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  assert.deepEqual([...a].sort((x, y) => x - y), Array.from({ length: 1000 }, (_, i) => i));
});
