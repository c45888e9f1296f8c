import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { FrameReader } from "../../sdk/transport/frame-reader";

interface Frame {
  opcode: number;
  payload: Buffer;
  mask: number[] | null;
}

/** A frame's bytes as RFC 6455 section 5.2 lays them out (written here, not by ws, to test what ws would not send). */
function encode(f: Frame, first = 0x80 | f.opcode): Buffer {
  const n = f.payload.length;
  const len = n >= 65536 ? [127, ...Array.from(Buffer.from(BigInt(n).toString(16).padStart(16, "0"), "hex"))] : n > 125 ? [126, n >> 8, n & 0xff] : [n];
  len[0] |= f.mask ? 0x80 : 0;
  const body = Buffer.from(f.payload);
  if (f.mask) for (let i = 0; i < body.length; i++) body[i] ^= f.mask[i & 3]!;
  return Buffer.concat([Buffer.from([first, ...len, ...(f.mask ?? [])]), body]);
}

function collect(maxPayload = 1 << 24): { reader: FrameReader; got: Array<[number, Buffer]>; broken: Array<[string, number]> } {
  const got: Array<[number, Buffer]> = [];
  const broken: Array<[string, number]> = [];
  const reader = new FrameReader(maxPayload, {
    binary: (p) => got.push([2, Buffer.from(p)]),
    control: (op, p) => got.push([op, p]),
    broken: (why, code) => broken.push([why, code]),
  });
  return { reader, got, broken };
}

const frameArb = fc.oneof(
  fc.record({
    opcode: fc.constant(2),
    payload: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.constantFrom(125, 126, 65535, 65536, 70000)).map((n) => Buffer.from(Buffer.alloc(n).map((_, i) => (i * 31 + n) & 0xff))),
    mask: fc.option(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), { nil: null }),
  }),
  fc.record({
    opcode: fc.constantFrom(1, 9, 10),
    payload: fc.uint8Array({ maxLength: 125 }).map((a) => Buffer.from(a)),
    mask: fc.option(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), { nil: null }),
  }),
);

test("frames split into chunks anywhere arrive whole, unmasked and in order, binary ones in the reader's own reused buffer", () => {
  fc.assert(
    fc.property(fc.array(frameArb, { minLength: 1, maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 70000 }), { minLength: 1, maxLength: 20 }), (frames, cuts) => {
      const bytes = Buffer.concat(frames.map((f) => encode(f)));
      const { reader, got, broken } = collect();
      let at = 0;
      for (let i = 0; at < bytes.length; i++) {
        const n = cuts[i % cuts.length]!;
        reader.push(bytes.subarray(at, at + n));
        at += n;
      }
      assert.deepEqual(broken, []);
      assert.equal(got.length, frames.length);
      got.forEach(([op, p], i) => {
        assert.equal(op, frames[i]!.opcode);
        assert.ok(p.equals(frames[i]!.payload), `frame ${i}: ${p.length} bytes differ from the ${frames[i]!.payload.length} sent`);
      });
    }),
    { numRuns: 200 },
  );
});

test("a binary payload is lent: the next frame reuses its memory, so a reader's user copies what it keeps", () => {
  const lent: Buffer[] = [];
  const reader = new FrameReader(1024, { binary: (p) => lent.push(p), control: () => undefined, broken: () => assert.fail("broken") });
  reader.push(Buffer.concat([encode({ opcode: 2, payload: Buffer.from([1, 2, 3]), mask: null }), encode({ opcode: 2, payload: Buffer.from([7, 8, 9]), mask: null })]));
  assert.equal(lent[0]!.buffer, lent[1]!.buffer);
  assert.deepEqual([...lent[0]!], [7, 8, 9]);
});

test("bytes that break RFC 6455 or meshtrain's use of it are refused with the close code to send, and nothing after them is read", () => {
  const cases: Array<[string, Buffer, RegExp, number]> = [
    ["a fragment", encode({ opcode: 2, payload: Buffer.from([1]), mask: null }, 0x02), /fragmented/, 1002],
    ["a continuation", encode({ opcode: 0, payload: Buffer.from([1]), mask: null }, 0x80), /fragmented/, 1002],
    ["a reserved bit", encode({ opcode: 2, payload: Buffer.from([1]), mask: null }, 0xc2), /reserved bit/, 1002],
    ["an unknown opcode", encode({ opcode: 3, payload: Buffer.from([1]), mask: null }), /unknown opcode 3/, 1002],
    ["a long ping", encode({ opcode: 9, payload: Buffer.alloc(126), mask: null }), /control frame of 126 bytes/, 1002],
    ["too big a frame", encode({ opcode: 2, payload: Buffer.alloc(2000), mask: null }), /2000 bytes \(at most 1024\)/, 1009],
  ];
  for (const [what, bytes, message, code] of cases) {
    const { reader, got, broken } = collect(1024);
    reader.push(Buffer.concat([bytes, encode({ opcode: 2, payload: Buffer.from([5]), mask: null })]));
    assert.equal(broken.length, 1, what);
    assert.match(broken[0]![0], message, what);
    assert.equal(broken[0]![1], code, what);
    assert.deepEqual(got, [], what);
  }
});
