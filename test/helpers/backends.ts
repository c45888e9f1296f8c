import * as tf from "@tensorflow/tfjs";
import { registerNativeBackend } from "../../sdk/backends/native/register";

/** Makes the native backend available in this process (tests compare it with the stock cpu one). */
export function nativeAvailable(): boolean {
  const r = registerNativeBackend(1);
  if (!r.ok) throw new Error(`native kernels unavailable: ${r.reason}`);
  return true;
}

/** Host copies of the values of whatever `f` returns, computed on `backend`. */
export function runOn(backend: string, f: () => tf.Tensor | tf.Tensor[]): Array<{ shape: number[]; values: Float32Array | Int32Array }> {
  tf.setBackend(backend);
  return tf.tidy(() => {
    const out = f();
    return (Array.isArray(out) ? out : [out]).map((t) => ({ shape: [...t.shape], values: t.dataSync().slice() as Float32Array }));
  });
}

/** Largest |a - b| / (tol_abs + |b|) style check: every element within rel * max(1, |b|). */
export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, rel: number, what: string): void {
  if (actual.length !== expected.length) throw new Error(`${what}: ${actual.length} values, expected ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (Number.isNaN(e) && Number.isNaN(a)) continue;
    if (!(Math.abs(a - e) <= rel * Math.max(1, Math.abs(e)))) {
      throw new Error(`${what}: element ${i} is ${a}, expected ${e} (tolerance ${rel} relative)`);
    }
  }
}

/** Deterministic pseudo-random floats in [lo, hi). */
export function randomArray(n: number, seed: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = lo + ((s >>> 0) / 4294967296) * (hi - lo);
  }
  return out;
}
