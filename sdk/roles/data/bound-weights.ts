import type * as tf from "@tensorflow/tfjs";
import type { NativeBackend } from "../../backends/native/backend";

/** A variable and where its values start in a buffer of several variables' weights. */
export interface Placed {
  v: tf.Variable;
  at: number;
}

/**
 * Variables as views of one buffer of their weights, so that an all-gather into that buffer
 * (ZeRO-1's of every weight, ZeRO-2's of a layer's) leaves the new weights where the model
 * reads them, with no copy after it. Each variable whose values lie elsewhere (at first, or
 * after an update copied memory it shared with another tensor) is copied in first, unless
 * `gathered` (the buffer came back from the communication thread holding them) and then bound.
 */
export function bindViews(
  backend: NativeBackend,
  vars: readonly Placed[],
  buf: Float32Array,
  gathered = false,
): Float32Array {
  for (const { v, at } of vars) {
    const values = backend.values(v);
    if (values.buffer === buf.buffer && values.byteOffset === buf.byteOffset + at * 4) continue;
    if (!gathered) buf.set(values, at);
    backend.rebind(v, buf.subarray(at, at + v.size));
  }
  return buf;
}
