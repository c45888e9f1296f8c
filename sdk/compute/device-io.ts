import * as tf from "@tensorflow/tfjs";
import { NativeBackend } from "../backends/native/backend";

/**
 * Moving tensors between the host and a device. On a GPU backend (webgpu, webgl) a tensor lives
 * in device memory: reading it back is an awaited round trip (webgpu has no synchronous read in
 * Node: dataSync needs an OffscreenCanvas), so a step reads everything it needs back in one
 * read and uploads what it applies in one upload. On the CPU backends a read is a copy (or, on
 * the native backend, no copy at all).
 */

/** Whether tensors live on a device whose reads are asynchronous round trips. */
export function onDevice(): boolean {
  const name = tf.getBackend();
  return name === "webgpu" || name === "webgl";
}

/** Time this step spent reading back from and uploading to the device, in ms (zero on CPU backends). */
export class TransferClock {
  readbackMs = 0;
  uploadMs = 0;

  reset(): void {
    this.readbackMs = 0;
    this.uploadMs = 0;
  }
}

/** The worker's one clock: a worker runs one step at a time. */
export const transfers = new TransferClock();

/** A float32 tensor's values: the native backend's own array (no copy), one awaited read on a device, else dataSync. */
export async function readTensor(t: tf.Tensor): Promise<Float32Array> {
  const b = tf.backend();
  if (b instanceof NativeBackend) return b.values(t);
  if (!onDevice()) return t.dataSync() as Float32Array;
  // A read waits for every kernel queued before it: a one-value read first waits for those (that
  // is compute), so the timed read below is the transfer alone.
  const first = tf.tidy(() => t.reshape([-1]).slice(0, 1));
  await first.data();
  first.dispose();
  const t0 = performance.now();
  const data = (await t.data()) as Float32Array;
  transfers.readbackMs += performance.now() - t0;
  return data;
}

/** Several tensors' values, flat and in order: on a device one concatenation and one read; elsewhere a copy of each. */
export async function readConcat(ts: readonly tf.Tensor[], out?: Float32Array): Promise<Float32Array> {
  const length = ts.reduce((n, t) => n + t.size, 0);
  const dst = out ?? new Float32Array(length);
  if (ts.length === 0) return dst;
  if (onDevice()) {
    const all = tf.tidy(() => tf.concat(ts.map((t) => t.reshape([-1]))));
    try {
      dst.set(await readTensor(all));
    } finally {
      all.dispose();
    }
    return dst;
  }
  let off = 0;
  for (const t of ts) {
    dst.set(await readTensor(t), off);
    off += t.size;
  }
  return dst;
}

/**
 * Tensors of these shapes holding `flat`'s values in order: on a device one upload split there,
 * elsewhere a tensor per shape. The caller disposes them.
 */
export function tensorsFromFlat(flat: Float32Array, shapes: ReadonlyArray<readonly number[]>): tf.Tensor[] {
  const sizes = shapes.map((s) => s.reduce((a, d) => a * d, 1));
  if (!onDevice()) {
    let off = 0;
    return shapes.map((s, i) => {
      const t = tf.tensor(flat.subarray(off, off + sizes[i]!), [...s], "float32");
      off += sizes[i]!;
      return t;
    });
  }
  const t0 = performance.now();
  const total = sizes.reduce((x, y) => x + y, 0);
  const all = tf.tensor1d(flat.subarray(0, total), "float32");
  // The webgpu backend uploads a tensor when a kernel first uses it; asking now puts the bytes
  // on the device queue here, so the time is the upload's (the host's side of it), not a kernel's.
  (tf.backend() as { uploadToGPU?: (dataId: object) => void }).uploadToGPU?.(all.dataId);
  transfers.uploadMs += performance.now() - t0;
  const out = tf.tidy(() =>
    sizes.length === 1
      ? [all.reshape([...shapes[0]!])]
      : tf.split(all, sizes).map((p, i) => p.reshape([...shapes[i]!])),
  );
  all.dispose();
  return out;
}

/** Writes `flat`'s values into the variables in order (one upload on a device). */
export function assignFlat(vars: readonly tf.Variable[], flat: Float32Array): void {
  const ts = tensorsFromFlat(
    flat,
    vars.map((v) => v.shape),
  );
  vars.forEach((v, i) => v.assign(ts[i]!));
  tf.dispose(ts);
}
