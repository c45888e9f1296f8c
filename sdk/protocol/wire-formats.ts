/** How a data-parallel all-reduce or a parameter-server push sends gradients: 16-bit floats instead of 32. */
export type Compression = "fp16" | "bf16";
export const COMPRESSIONS = ["fp16", "bf16"] as const;

/** How an all-reduce's or a push's values travel: the first `packed` as 16-bit floats, the rest as float32. */
export interface WireFormat {
  compression: Compression;
  packed: number;
}

/** Format codes shared with native/src/half.h. */
export const FORMAT_CODE: Readonly<Record<Compression, number>> = { fp16: 1, bf16: 2 };

/** decode's modes: store the values, add them, or add them and round the sum to the format. */
export const DECODE = { store: 0, add: 1, addRound: 2 } as const;

/**
 * Float32 to and from IEEE half (fp16) or bfloat16 (bf16), rounding to nearest, ties to even.
 * The native codec (native/src/half.c) and this JavaScript one give the same bits, so a ring
 * whose members differ in having the addon still ends with equal replicas.
 */
export interface HalfCodec {
  /** src -> dst, 2 bytes per value, little-endian. */
  encode(format: number, src: Float32Array, dst: Uint8Array): void;
  /** The values in src (2 bytes each) into dst from dstOffset, as `mode` says. */
  decode(format: number, src: Uint8Array, dst: Float32Array, dstOffset: number, mode: number): void;
  /** Each value to the nearest the format holds, in place. */
  round(format: number, x: Float32Array): void;
  /** Error feedback: v = g + r; g = v rounded to the format; r = v - g (what rounding left out, sent next step). */
  feedback(format: number, g: Float32Array, r: Float32Array): void;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bitsOf(x: number): number {
  f32[0] = x;
  return u32[0]!;
}

function floatOf(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0]!;
}

export function fp16Of(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return 0x7e00;
  if (ax >= 0x477ff000) return sign | 0x7c00;
  if (ax >= 0x38800000) return sign | (((ax + 0xfff + ((ax >>> 13) & 1) - 0x38000000) >>> 13) & 0x7fff);
  if (ax < 0x33000000) return sign;
  const e = ax >>> 23;
  const m = (ax & 0x7fffff) | 0x800000;
  const shift = 126 - e;
  let q = m >>> shift;
  const rem = m & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rem > half || (rem === half && (q & 1) !== 0)) q++;
  return sign | q;
}

export function f32OfFp16(h: number): number {
  const sign = (h & 0x8000) << 16;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return (sign | 0x7f800000 | (m << 13)) >>> 0;
  if (e !== 0) return (sign | ((e + 112) << 23) | (m << 13)) >>> 0;
  return (sign | bitsOf(m * 2 ** -24)) >>> 0;
}

export function bf16Of(x: number): number {
  if ((x & 0x7fffffff) > 0x7f800000) return 0x7fc0;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Every fp16 value decoded once: decoding is a look-up. */
let fp16Table: Float32Array | undefined;
function fp16Values(): Float32Array {
  if (!fp16Table) {
    fp16Table = new Float32Array(65536);
    const bits = new Uint32Array(fp16Table.buffer);
    for (let h = 0; h < 65536; h++) bits[h] = f32OfFp16(h);
  }
  return fp16Table;
}

function encode1(format: number, v: number): number {
  return format === FORMAT_CODE.fp16 ? fp16Of(bitsOf(v)) : bf16Of(bitsOf(v));
}

function decode1(format: number, h: number): number {
  return format === FORMAT_CODE.fp16 ? fp16Values()[h]! : floatOf(h << 16);
}

/** Rounds a float32 value to the format and back. */
export function roundTo(format: number, v: number): number {
  return decode1(format, encode1(format, v));
}

export const jsHalfCodec: HalfCodec = {
  encode(format, src, dst) {
    for (let i = 0; i < src.length; i++) {
      const h = encode1(format, src[i]!);
      dst[2 * i] = h & 0xff;
      dst[2 * i + 1] = h >>> 8;
    }
  },
  decode(format, src, dst, dstOffset, mode) {
    const n = src.length >>> 1;
    for (let i = 0; i < n; i++) {
      const v = decode1(format, src[2 * i]! | (src[2 * i + 1]! << 8));
      const j = dstOffset + i;
      if (mode === DECODE.store) dst[j] = v;
      else {
        dst[j]! += v;
        if (mode === DECODE.addRound) dst[j] = roundTo(format, dst[j]!);
      }
    }
  },
  round(format, x) {
    for (let i = 0; i < x.length; i++) x[i] = roundTo(format, x[i]!);
  },
  feedback(format, g, r) {
    for (let i = 0; i < g.length; i++) {
      const v = Math.fround(g[i]! + r[i]!);
      const q = roundTo(format, v);
      r[i] = v - q;
      g[i] = q;
    }
  },
};
