import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { DECODE, FORMAT_CODE, jsHalfCodec, roundTo, type HalfCodec } from "../../sdk/protocol/wire-formats";
import { loadAddon } from "../../sdk/backends/native/addon";
import { ErrorFeedback } from "../../sdk/compute/error-feedback";
import { bestHalfCodec } from "../../sdk/collectives/half-codec";

/**
 * The 16-bit codec against values IEEE 754 fixes (fp16 and bfloat16, round to nearest, ties to
 * even), the native codec against the JavaScript one bit for bit (the two data planes must end
 * with the same sums), and error feedback against what it promises: nothing lost but the last
 * residual, so a gradient too small for fp16 still moves the weights.
 */

const FP16 = FORMAT_CODE.fp16;
const BF16 = FORMAT_CODE.bf16;

function bits(format: number, values: number[], codec: HalfCodec = jsHalfCodec): number[] {
  const out = new Uint8Array(2 * values.length);
  codec.encode(format, Float32Array.from(values), out);
  return values.map((_, i) => out[2 * i]! | (out[2 * i + 1]! << 8));
}

test("fp16: values IEEE 754 fixes, rounding to nearest even, overflow, subnormals, NaN", () => {
  const cases: Array<[number, number]> = [
    [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [65519, 0x7bff], [65520, 0x7c00], [1e9, 0x7c00], [-Infinity, 0xfc00],
    [2 ** -14, 0x0400], [2 ** -24, 0x0001], [2 ** -25, 0x0000], [1.5 * 2 ** -25, 0x0001], [3 * 2 ** -25, 0x0002], [1023 * 2 ** -24, 0x03ff],
    [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [1 + 2 ** -10, 0x3c01], [-0, 0x8000], [0.1, 0x2e66],
  ];
  // Both codecs; 19 values, so the native one's 8-wide path runs too.
  assert.deepEqual(bits(FP16, cases.map((c) => c[0])), cases.map((c) => c[1]));
  assert.deepEqual(bits(FP16, cases.map((c) => c[0]), bestHalfCodec()), cases.map((c) => c[1]));
  const [nan] = bits(FP16, [NaN]);
  assert.equal(nan! & 0x7c00, 0x7c00);
  assert.notEqual(nan! & 0x3ff, 0);
});

test("bf16: the top half of float32, rounded to nearest even; NaN stays NaN", () => {
  const cases: Array<[number, number]> = [
    [1, 0x3f80], [-2, 0xc000], [1 + 2 ** -8, 0x3f80], [1 + 3 * 2 ** -8, 0x3f82], [3.4e38, 0x7f80], [1e-40, 0x0001], [Infinity, 0x7f80],
  ];
  assert.deepEqual(bits(BF16, cases.map((c) => c[0])), cases.map((c) => c[1]));
  assert.deepEqual(bits(BF16, cases.map((c) => c[0]), bestHalfCodec()), cases.map((c) => c[1]));
  const [nan] = bits(BF16, [NaN]);
  assert.ok((nan! & 0x7f80) === 0x7f80 && (nan! & 0x7f) !== 0);
});

test("decoding every fp16 and bf16 value and encoding it again gives the same bits", () => {
  for (const format of [FP16, BF16]) {
    const all = new Uint8Array(2 * 65536);
    for (let h = 0; h < 65536; h++) [all[2 * h], all[2 * h + 1]] = [h & 0xff, h >>> 8];
    const values = new Float32Array(65536);
    jsHalfCodec.decode(format, all, values, 0, DECODE.store);
    const again = new Uint8Array(2 * 65536);
    jsHalfCodec.encode(format, values, again);
    for (let h = 0; h < 65536; h++) {
      if (Number.isNaN(values[h]!)) continue;
      assert.equal(again[2 * h]! | (again[2 * h + 1]! << 8), h, `format ${format}, 0x${h.toString(16)}`);
    }
  }
});

/** Bit for bit, but any NaN equals any NaN: JavaScript numbers keep no NaN payload. */
function sameFloats(a: Float32Array, b: Float32Array): void {
  const [ua, ub] = [new Uint32Array(a.buffer), new Uint32Array(b.buffer)];
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]!) && Number.isNaN(b[i]!)) continue;
    assert.equal(ua[i], ub[i], `value ${i}: 0x${ua[i]!.toString(16)} vs 0x${ub[i]!.toString(16)}`);
  }
}

test("the native codec equals the JavaScript one bit for bit (any NaN for any NaN), on any float32 bits", (t) => {
  const load = loadAddon();
  if (!load.ok) return t.skip(`no native addon: ${load.reason}`);
  const native = bestHalfCodec();
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { minLength: 1, maxLength: 300 }), fc.constantFrom(FP16, BF16), fc.integer({ min: 0, max: 2 }), (raw, format, mode) => {
      const x = new Float32Array(Uint32Array.from(raw).buffer);
      const [a, b] = [new Uint8Array(2 * x.length), new Uint8Array(2 * x.length)];
      native.encode(format, x, a);
      jsHalfCodec.encode(format, x, b);
      assert.deepEqual(a, b);
      const [da, db] = [x.slice(), x.slice()];
      native.decode(format, a, da, 0, mode);
      jsHalfCodec.decode(format, b, db, 0, mode);
      sameFloats(da, db);
      const [ga, ra, gb, rb] = [x.slice(), x.slice().reverse(), x.slice(), x.slice().reverse()];
      native.feedback(format, ga, ra);
      jsHalfCodec.feedback(format, gb, rb);
      sameFloats(ga, gb);
      sameFloats(ra, rb);
    }),
    { numRuns: 300 },
  );
});

test("error feedback: what was sent over many steps is what was computed, but for the last residual", () => {
  for (const compression of ["fp16", "bf16"] as const) {
    const ef = new ErrorFeedback(compression, 1000);
    const computed = new Float64Array(1000);
    const sent = new Float64Array(1000);
    const largest = new Float64Array(1000);
    const g = new Float32Array(1000);
    for (let step = 0; step < 50; step++) {
      for (let i = 0; i < g.length; i++) g[i] = Math.sin(step * 1.3 + i) * 10 ** ((i % 8) - 9);
      g.forEach((v, i) => (largest[i] = Math.max(largest[i]!, 2 * Math.abs(v))));
      g.forEach((v, i) => (computed[i]! += v));
      ef.compress(g);
      for (let i = 0; i < g.length; i++) {
        assert.equal(roundTo(FORMAT_CODE[compression], g[i]!), g[i]!, "sent values are ones the format holds");
        sent[i]! += g[i]!;
      }
    }
    // What is missing is the last residual: at most half a unit in the last place of the last
    // value rounded (under twice the largest gradient), plus float32's rounding of each carry.
    const unit = compression === "fp16" ? 2 ** -11 : 2 ** -8;
    const smallest = compression === "fp16" ? 2 ** -25 : 0;
    for (let i = 0; i < g.length; i++) {
      const bound = (unit + 50 * 2 ** -24) * largest[i]! + smallest;
      assert.ok(Math.abs(sent[i]! - computed[i]!) <= bound, `element ${i}: sent ${sent[i]} computed ${computed[i]}, bound ${bound}`);
    }
  }
});

test("error feedback moves a weight whose gradient fp16 cannot hold; without it, nothing moves", () => {
  const g = 2e-8; // below half of fp16's smallest value, 2^-24 = 5.96e-8: rounds to 0 on its own
  assert.equal(roundTo(FP16, g), 0);
  const ef = new ErrorFeedback("fp16", 1);
  let sent = 0;
  for (let step = 0; step < 300; step++) {
    const x = Float32Array.of(g);
    ef.compress(x);
    sent += x[0]!;
  }
  assert.ok(Math.abs(sent - 300 * g) <= 2 ** -24, `sent ${sent} of ${300 * g}`);
});
