import { ProtocolError } from "../errors/errors";
import type { Tensorlike } from "../protocol/tensor";
import { DECODE, FORMAT_CODE, type HalfCodec, type WireFormat } from "../protocol/wire-formats";
import { bestHalfCodec } from "./half-codec";

/**
 * A compressed push as it travels in the attachments a message may carry (float32 or int32):
 * the first `packed` values as 16-bit floats, two to an int32 (the last one padded with zero),
 * then the rest as float32. The values must already be ones the format holds (error feedback
 * rounded them), so packing loses nothing more.
 */
export function packValues(values: Float32Array, wire: WireFormat, codec: HalfCodec = bestHalfCodec()): Tensorlike[] {
  const words = new Int32Array(Math.ceil(wire.packed / 2));
  codec.encode(FORMAT_CODE[wire.compression], values.subarray(0, wire.packed), new Uint8Array(words.buffer));
  const rest = values.slice(wire.packed);
  return [
    { data: words, shape: [words.length] },
    { data: rest, shape: [rest.length] },
  ];
}

/** The values a packed push holds, checked against the `length` values (`packed` of them 16-bit) the receiver expects. */
export function unpackValues(
  attachments: readonly Tensorlike[],
  length: number,
  wire: WireFormat,
  codec: HalfCodec = bestHalfCodec(),
): Float32Array {
  const [words, rest] = attachments;
  const wantWords = Math.ceil(wire.packed / 2);
  if (attachments.length !== 2 || !(words?.data instanceof Int32Array) || !(rest?.data instanceof Float32Array)) {
    throw new ProtocolError(
      `a ${wire.compression} push carries ${attachments.length} tensors; expected int32 words of 16-bit values, then the float32 rest`,
    );
  }
  if (words.data.length !== wantWords || rest.data.length !== length - wire.packed) {
    throw new ProtocolError(
      `a ${wire.compression} push holds ${words.data.length} words and ${rest.data.length} float32 values; expected ${wantWords} and ${length - wire.packed}`,
    );
  }
  const out = new Float32Array(length);
  const bytes = new Uint8Array(words.data.buffer, words.data.byteOffset, 2 * wire.packed);
  codec.decode(FORMAT_CODE[wire.compression], bytes, out, 0, DECODE.store);
  out.set(rest.data, wire.packed);
  return out;
}
