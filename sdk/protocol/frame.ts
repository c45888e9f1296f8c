import { ProtocolError } from "../errors/errors";
import { jsHalfCodec, FORMAT_CODE, DECODE } from "./wire-formats";
import { CODE_DTYPE, DTYPE_CODE, type DType, type TensorData } from "./tensor";

/**
 * Binary frame: a fixed 32-byte little-endian header, then raw element bytes.
 *
 *   0 u32 magic "MTF1"   4 u8 kind   5 u8 dtype   6 u16 reserved (0)
 *   8 u32 seq            12 u32 tensor
 *  16 u32 offset (elements into the tensor)   20 u32 length (elements here)
 *  24 u32 total (elements of the whole tensor) 28 u32 reserved (0)
 *
 * `seq` is the id of the control message a tensor belongs to (attachments) or the number of a
 * collective operation (ring chunks); `tensor` is the attachment index or the ring step.
 */
export const FRAME_MAGIC = 0x3146544d; // "MTF1" read little-endian
export const HEADER_BYTES = 32;
export const ELEMENT_BYTES = 4;

/**
 * What a frame's elements are: a tensor's own dtype, or 16-bit floats a compressed all-reduce
 * sends (2 bytes each; a frame of them decodes to float32).
 */
export type FrameDType = DType | "float16" | "bfloat16";
const FRAME_DTYPE_CODE: Readonly<Record<FrameDType, number>> = { ...DTYPE_CODE, float16: 3, bfloat16: 4 };
const CODE_FRAME_DTYPE: Readonly<Record<number, FrameDType>> = { ...CODE_DTYPE, 3: "float16", 4: "bfloat16" };

export function elementBytes(dtype: FrameDType): number {
  return dtype === "float16" || dtype === "bfloat16" ? 2 : ELEMENT_BYTES;
}

/** attachment: a control message's tensor; ring: an all-reduce chunk; activation / gradient: a micro-batch between pipeline stages. */
export const FRAME_KIND = { attachment: 1, ring: 2, activation: 3, gradient: 4 } as const;
export type FrameKind = keyof typeof FRAME_KIND;
const KIND_NAME: Readonly<Record<number, FrameKind>> = { 1: "attachment", 2: "ring", 3: "activation", 4: "gradient" };

export interface FrameHeader {
  kind: FrameKind;
  dtype: FrameDType;
  seq: number;
  tensor: number;
  offset: number;
  length: number;
  total: number;
}

export interface DecodedFrame {
  header: FrameHeader;
  /** A view on the received bytes when they are aligned, else an aligned copy (made on first use). */
  readonly payload: TensorData;
  /** The payload's raw bytes, a view on the received buffer: never copied. */
  bytes: Buffer;
}

/** Header and payload in one buffer, ready to send; the payload is copied so the caller may reuse `data`. */
export function encodeFrame(header: FrameHeader, data: TensorData, from = 0): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + header.length * ELEMENT_BYTES);
  writeHeader(out, header);
  const src = new Uint8Array(data.buffer, data.byteOffset + from * ELEMENT_BYTES, header.length * ELEMENT_BYTES);
  out.set(src, HEADER_BYTES);
  return out;
}

/** Header and payload apart, the payload a view on `data` (Link.sendParts): nothing copied. */
export function frameParts(header: FrameHeader, data: TensorData, from = 0): [Buffer, Uint8Array] {
  const head = Buffer.allocUnsafe(HEADER_BYTES);
  writeHeader(head, header);
  return [head, new Uint8Array(data.buffer, data.byteOffset + from * ELEMENT_BYTES, header.length * ELEMENT_BYTES)];
}

export function writeHeader(out: Buffer, h: FrameHeader): void {
  out.writeUInt32LE(FRAME_MAGIC, 0);
  out.writeUInt8(frameKindCode(h.kind), 4);
  out.writeUInt8(FRAME_DTYPE_CODE[h.dtype], 5);
  out.writeUInt16LE(0, 6);
  out.writeUInt32LE(h.seq >>> 0, 8);
  out.writeUInt32LE(h.tensor >>> 0, 12);
  out.writeUInt32LE(h.offset >>> 0, 16);
  out.writeUInt32LE(h.length >>> 0, 20);
  out.writeUInt32LE(h.total >>> 0, 24);
  out.writeUInt32LE(0, 28);
}

function frameKindCode(kind: FrameKind): number {
  return FRAME_KIND[kind];
}

/** Parses and checks a frame; anything inconsistent is a ProtocolError saying which field. */
export function decodeFrame(buf: Buffer): DecodedFrame {
  if (buf.length < HEADER_BYTES) {
    throw new ProtocolError(`binary frame of ${buf.length} bytes is shorter than the ${HEADER_BYTES}-byte header`);
  }
  const magic = buf.readUInt32LE(0);
  if (magic !== FRAME_MAGIC) {
    throw new ProtocolError(
      `binary frame has magic 0x${magic.toString(16)}, expected 0x${FRAME_MAGIC.toString(16)} ("MTF1")`,
    );
  }
  const kind = KIND_NAME[buf.readUInt8(4)];
  if (kind === undefined) throw new ProtocolError(`binary frame has unknown kind ${buf.readUInt8(4)}`);
  const dtype = CODE_FRAME_DTYPE[buf.readUInt8(5)];
  if (dtype === undefined) throw new ProtocolError(`binary frame has unknown dtype code ${buf.readUInt8(5)}`);
  const header: FrameHeader = {
    kind,
    dtype,
    seq: buf.readUInt32LE(8),
    tensor: buf.readUInt32LE(12),
    offset: buf.readUInt32LE(16),
    length: buf.readUInt32LE(20),
    total: buf.readUInt32LE(24),
  };
  const payloadBytes = buf.length - HEADER_BYTES;
  const width = elementBytes(dtype);
  if (payloadBytes !== header.length * width) {
    throw new ProtocolError(
      `binary frame says ${header.length} ${dtype} elements (${header.length * width} bytes) but carries ${payloadBytes} bytes`,
    );
  }
  if (header.offset + header.length > header.total) {
    throw new ProtocolError(
      `binary frame covers elements [${header.offset}, ${header.offset + header.length}) beyond its tensor of ${header.total}`,
    );
  }
  const bytes = buf.subarray(HEADER_BYTES);
  let payload: TensorData | undefined;
  return {
    header,
    bytes,
    get payload(): TensorData {
      payload ??= viewPayload(buf, dtype, header.length);
      return payload;
    },
  };
}

function viewPayload(buf: Buffer, dtype: FrameDType, length: number): TensorData {
  const start = buf.byteOffset + HEADER_BYTES;
  if (dtype === "float16" || dtype === "bfloat16") {
    const out = new Float32Array(length);
    jsHalfCodec.decode(
      dtype === "float16" ? FORMAT_CODE.fp16 : FORMAT_CODE.bf16,
      buf.subarray(HEADER_BYTES),
      out,
      0,
      DECODE.store,
    );
    return out;
  }
  const Ctor = dtype === "float32" ? Float32Array : Int32Array;
  if (start % ELEMENT_BYTES === 0) return new Ctor(buf.buffer as ArrayBuffer, start, length);
  // Typed arrays need aligned memory; a frame sliced from a socket chunk may not be.
  const copy = new Ctor(length);
  new Uint8Array(copy.buffer).set(buf.subarray(HEADER_BYTES));
  return copy;
}
