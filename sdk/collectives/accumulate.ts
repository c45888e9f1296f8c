import { loadAddon } from "../backends/native/addon";

/**
 * dst[offset + i] += the float32 values in `bytes`: the all-reduce's inner loop. The bytes are a
 * view on a received frame at whatever alignment it arrived.
 */
export type Accumulate = (dst: Float32Array, bytes: Buffer, offset: number) => void;

function jsAccumulate(dst: Float32Array, bytes: Buffer, offset: number): void {
  const n = bytes.length >>> 2;
  if (bytes.byteOffset % 4 === 0) {
    const src = new Float32Array(bytes.buffer, bytes.byteOffset, n);
    for (let i = 0; i < n; i++) dst[offset + i]! += src[i]!;
  } else {
    for (let i = 0; i < n; i++) dst[offset + i]! += bytes.readFloatLE(i * 4);
  }
}

/** The native addon's vectorized add where it was built, else a JavaScript loop. */
export function bestAccumulate(): Accumulate {
  const load = loadAddon();
  return load.ok ? load.addon.accumulateBytes : jsAccumulate;
}
