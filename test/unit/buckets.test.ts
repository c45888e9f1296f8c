import assert from "node:assert/strict";
import { test } from "node:test";
import type { WireFormat } from "../../sdk/protocol/wire-formats";
import type { AllReduceStats } from "../../sdk/collectives/ring-allreduce";
import { BUCKET_BYTES, FIRST_BUCKET_BYTES, GradientBuckets } from "../../sdk/roles/data/buckets";
import { ErrorFeedback } from "../../sdk/compute/error-feedback";
import { halfHook } from "../../sdk/roles/data/hooks/half-hook";
import { wholeHook } from "../../sdk/roles/data/hooks/whole-hook";
import type { OverlapRing } from "../../sdk/roles/role";

/**
 * Gradient buckets as the backward pass fills them (last layers first): when each starts, what
 * it holds, that a part once started is never written again, and what a non-finite part does.
 * The ring here records instead of summing; the real ring runs in the integration tests.
 */

interface Started {
  from: number;
  length: number;
  copy: Float32Array;
  part: Float32Array;
  wire?: WireFormat;
}

function recordingRing(flat: Float32Array): OverlapRing & { started: Started[] } {
  const started: Started[] = [];
  return {
    started,
    start(part, wire) {
      started.push({ from: (part.byteOffset - flat.byteOffset) / 4, length: part.length, copy: part.slice(), part, ...(wire ? { wire } : {}) });
    },
    done: () => Promise.resolve(started.map((): AllReduceStats => ({ waitMs: 1, commMs: 2, bytesSent: 3 }))),
  };
}

// Three "layers" of a flat gradient, in layer order: 200k values (0.8 MB), 400k (1.6 MB), 1000.
const sizes = [200_000, 400_000, 1000];
const names = ["l1/kernel", "l2/kernel", "l3/kernel"];
const offsets = [0, 200_000, 600_000];
const n = 601_000;

/** The backward pass: the last layer's gradient first, each announced once written. */
function backward(flat: Float32Array, b: GradientBuckets, value: (layer: number) => number): void {
  for (let l = 2; l >= 0; l--) {
    flat.fill(value(l), offsets[l]!, offsets[l]! + sizes[l]!);
    b.ready(offsets[l]!);
  }
}

test("buckets start once DDP's sizes are reached, last layers first, and the state and flag go last", async () => {
  assert.ok(FIRST_BUCKET_BYTES < 1.6e6 && BUCKET_BYTES > 0.8e6, "the layer sizes below straddle the caps");
  const flat = new Float32Array(n + 3);
  const ring = recordingRing(flat);
  const b = new GradientBuckets(flat, n, ring, wholeHook(), { names, sizes });
  backward(flat, b, (l) => l + 1);
  // Layer 3 (4 KB) waits; with layer 2 (1.6 MB) the first bucket is full; layer 1 (0.8 MB) waits for the end.
  assert.deepEqual(ring.started.map((s) => [s.from, s.length]), [[200_000, 401_000]]);
  const stats = await b.finish(false, (flag) => flat.set([7, 8, flag ? 1 : 0], n));
  assert.deepEqual(ring.started.map((s) => [s.from, s.length]), [[200_000, 401_000], [0, 200_000], [n, 3]]);
  assert.deepEqual([...ring.started[2]!.copy], [7, 8, 0]);
  // What was started was never written afterwards (a native thread may be reading it).
  for (const s of ring.started) assert.deepEqual(s.part, s.copy);
  assert.deepEqual(stats, { waitMs: 3, commMs: 6, bytesSent: 9 });
  assert.equal(b.nonFinite, undefined);
});

test("a small gradient goes as one all-reduce of the whole buffer, as without buckets", async () => {
  const flat = new Float32Array(1000 + 1);
  const ring = recordingRing(flat);
  const b = new GradientBuckets(flat, 1000, ring, wholeHook(), { names: ["w"], sizes: [1000] });
  flat.fill(1, 0, 1000);
  b.ready(0);
  assert.equal(ring.started.length, 0);
  await b.finish(false, () => undefined);
  assert.deepEqual(ring.started.map((s) => [s.from, s.length]), [[0, 1001]]);
  assert.ok(b.whole);
});

test("a part holding NaN is zeroed before it leaves, named, and flags the step; a part already sent stays as sent", async () => {
  const flat = new Float32Array(n + 1);
  const ring = recordingRing(flat);
  const b = new GradientBuckets(flat, n, ring, wholeHook(), { names, sizes });
  backward(flat, b, (l) => (l === 0 ? NaN : 0.5));
  let flagged: boolean | undefined;
  await b.finish(false, (flag) => {
    flagged = flag;
    flat[n] = flag ? 1 : 0;
  });
  assert.equal(flagged, true);
  assert.deepEqual(b.nonFinite, { where: "gradient", variable: "l1/kernel" });
  assert.ok(ring.started[1]!.copy.every((v) => v === 0), "the NaN part left as zeros");
  assert.ok(ring.started[0]!.copy.every((v) => v === 0.5));
  assert.deepEqual([...ring.started[2]!.copy], [1]);
});

test("a slice that failed sends zeros for what was not sent yet, and the flag", async () => {
  const flat = new Float32Array(n + 1);
  const ring = recordingRing(flat);
  const b = new GradientBuckets(flat, n, ring, wholeHook(), { names, sizes });
  flat.fill(3, offsets[2]!, n);
  b.ready(offsets[2]!);
  flat.fill(9, 0, offsets[2]!); // half-written garbage of the layers the failure left
  await b.finish(true, (flag) => (flat[n] = flag ? 1 : 0));
  assert.deepEqual(ring.started.map((s) => [s.from, s.length]), [[0, n + 1]]);
  assert.ok(ring.started[0]!.copy.subarray(0, n).every((v) => v === 0));
  assert.equal(ring.started[0]!.copy[n], 1);
});

test("compressed buckets: each part rounded with the residual of its own place in the gradient", async () => {
  const flat = new Float32Array(n + 1);
  const ring = recordingRing(flat);
  const b = new GradientBuckets(flat, n, ring, halfHook("fp16", n), { names, sizes });
  backward(flat, b, (l) => 1 + 2 ** -12 * (l + 1)); // between fp16 values: each rounds, leaving a residual
  await b.finish(false, () => undefined);
  assert.deepEqual(ring.started.map((s) => s.wire), [{ compression: "fp16", packed: 401_000 }, { compression: "fp16", packed: 200_000 }, undefined]);
  // The same values compressed whole give the same bits: the residual is per position.
  const whole = new Float32Array(n);
  for (let l = 0; l < 3; l++) whole.fill(1 + 2 ** -12 * (l + 1), offsets[l]!, offsets[l]! + sizes[l]!);
  new ErrorFeedback("fp16", n).compress(whole);
  assert.deepEqual(flat.subarray(0, n), whole);
});
