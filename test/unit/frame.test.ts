import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ProtocolError } from "../../sdk/errors/errors";
import { decodeFrame, encodeFrame, HEADER_BYTES, type FrameHeader } from "../../sdk/protocol/frame";

const header = (h: Partial<FrameHeader> = {}): FrameHeader => ({
  kind: "attachment",
  dtype: "float32",
  seq: 7,
  tensor: 1,
  offset: 0,
  length: 3,
  total: 3,
  ...h,
});

test("a frame round-trips header and payload", () => {
  fc.assert(
    fc.property(
      fc.float32Array({ maxLength: 300, noNaN: true }),
      fc.nat(2 ** 32 - 1),
      fc.nat(1000),
      fc.constantFrom("attachment" as const, "ring" as const),
      (values, seq, extra, kind) => {
        const data = Float32Array.from(values);
        const h = header({ kind, seq, length: data.length, total: data.length + extra, offset: extra });
        const decoded = decodeFrame(encodeFrame(h, data));
        assert.deepEqual(decoded.header, h);
        assert.deepEqual(Array.from(decoded.payload), Array.from(data));
      },
    ),
  );
});

test("encodeFrame copies the chosen slice, so the source may change afterwards", () => {
  const data = Float32Array.from([1, 2, 3, 4, 5]);
  const buf = encodeFrame(header({ offset: 2, length: 2, total: 5 }), data, 2);
  data.fill(0);
  assert.deepEqual(Array.from(decodeFrame(buf).payload), [3, 4]);
});

test("int32 payloads keep their dtype", () => {
  const data = Int32Array.from([-1, 2 ** 31 - 1, 0]);
  const d = decodeFrame(encodeFrame(header({ dtype: "int32" }), data));
  assert.ok(d.payload instanceof Int32Array);
  assert.deepEqual(Array.from(d.payload), [-1, 2 ** 31 - 1, 0]);
});

test("a misaligned buffer is decoded through an aligned copy", () => {
  const frame = encodeFrame(header(), Float32Array.from([1.5, 2.5, 3.5]));
  const shifted = Buffer.alloc(frame.length + 1);
  frame.copy(shifted, 1);
  const view = shifted.subarray(1);
  assert.notEqual((view.byteOffset + HEADER_BYTES) % 4, 0);
  assert.deepEqual(Array.from(decodeFrame(view).payload), [1.5, 2.5, 3.5]);
});

test("malformed frames are ProtocolErrors that say which field is wrong", () => {
  const good = encodeFrame(header(), Float32Array.from([1, 2, 3]));
  const cases: Array<[string, Buffer, RegExp]> = [
    ["short", good.subarray(0, 10), /shorter than the 32-byte header/],
    ["magic", Buffer.concat([Buffer.from([0, 0, 0, 0]), good.subarray(4)]), /magic/],
    ["kind", (() => { const b = Buffer.from(good); b[4] = 9; return b; })(), /unknown kind 9/],
    ["dtype", (() => { const b = Buffer.from(good); b[5] = 7; return b; })(), /unknown dtype code 7/],
    ["length", good.subarray(0, good.length - 4), /says 3 float32 elements .* carries 8 bytes/],
    // A compressed ring chunk: 2 bytes per element, so 3 of them cannot come in 8 bytes.
    ["half length", (() => { const b = Buffer.from(good.subarray(0, good.length - 4)); b[5] = 3; return b; })(), /says 3 float16 elements \(6 bytes\) but carries 8 bytes/],
    ["bounds", (() => { const b = Buffer.from(good); b.writeUInt32LE(5, 16); return b; })(), /beyond its tensor of 3/],
  ];
  for (const [name, buf, pattern] of cases) {
    assert.throws(() => decodeFrame(buf), (e: unknown) => e instanceof ProtocolError && pattern.test(e.message), name);
  }
});

test("random bytes never decode into an inconsistent frame", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      try {
        const d = decodeFrame(Buffer.from(bytes));
        assert.equal(d.payload.length, d.header.length);
        assert.ok(d.header.offset + d.header.length <= d.header.total);
      } catch (e) {
        assert.ok(e instanceof ProtocolError);
      }
    }),
    { numRuns: 2000 },
  );
});
