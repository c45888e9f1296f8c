import * as tf from "@tensorflow/tfjs";
import { MathBackendCPU } from "@tensorflow/tfjs-backend-cpu";
import type { NativeAddon } from "./addon";
import { ArrayPool } from "./array-pool";

export const NATIVE_BACKEND = "native";

/**
 * TF.js's cpu backend with meshtrain's native kernels registered over the hot ones. Tensors live
 * in host memory exactly as in the cpu backend, so every stock cpu kernel still works on them;
 * outputs come from a pool of recycled arrays.
 */
export class NativeBackend extends MathBackendCPU {
  readonly pool = new ArrayPool();
  /** Column buffer lent to convolutions, grown on demand and kept. */
  private scratchBuffer = new Float32Array(0);

  constructor(readonly addon: NativeAddon) {
    super();
    // The cpu backend's first write prints an "install tfjs-node" banner; this backend is the answer to it.
    (this as unknown as { firstUse: boolean }).firstUse = false;
  }

  override write(values: tf.backend_util.BackendValues, shape: number[], dtype: tf.DataType): tf.DataId {
    this.pool.retain(values);
    return super.write(values, shape, dtype);
  }

  override move(
    dataId: tf.DataId,
    values: tf.backend_util.BackendValues,
    shape: number[],
    dtype: tf.DataType,
    refCount: number,
  ): void {
    this.pool.retain(values);
    super.move(dataId, values, shape, dtype, refCount);
  }

  override readSync(dataId: tf.DataId): tf.backend_util.BackendValues {
    const values = super.readSync(dataId);
    this.pool.escape(values);
    return values;
  }

  override disposeData(dataId: tf.DataId, force = false): boolean {
    const entry = this.data.has(dataId) ? this.data.get(dataId) : undefined;
    const removed = super.disposeData(dataId, force);
    if (entry && !this.data.has(dataId)) this.pool.release(entry.values);
    return removed;
  }

  /** The float32 values behind a tensor, without copying. */
  values(t: tf.TensorInfo): Float32Array {
    const entry = this.data.get(t.dataId);
    // A few stock kernels store a float32 tensor's values in another array type (a cast from
    // bool keeps its Uint8Array); the C kernels need real float32 memory.
    if (!(entry.values instanceof Float32Array)) entry.values = Float32Array.from(entry.values as ArrayLike<number>);
    return entry.values as Float32Array;
  }

  /**
   * Points a float32 tensor's data at `values` (as many), letting go of what it held without
   * recycling it: under ZeRO-3 a layer's weights live in its gathered buffer only while needed.
   */
  rebind(t: tf.TensorInfo, values: Float32Array): void {
    const entry = this.data.get(t.dataId);
    if (values.length !== tf.util.sizeFromShape(t.shape))
      throw new Error(`rebind: ${values.length} values for a tensor of shape [${t.shape.join(", ")}]`);
    entry.values = values;
  }

  /** The int32 values behind an int32 tensor (ids), without copying where they are Int32Array already. */
  intValues(t: tf.TensorInfo): Int32Array {
    const entry = this.data.get(t.dataId);
    if (!(entry.values instanceof Int32Array)) entry.values = Int32Array.from(entry.values as ArrayLike<number>);
    return entry.values as Int32Array;
  }

  /** A new float32 tensor whose values the caller fills. */
  output(shape: number[]): { info: tf.TensorInfo; values: Float32Array } {
    const values = this.pool.alloc(tf.util.sizeFromShape(shape));
    return { info: this.makeTensorInfo(shape, "float32", values), values };
  }

  scratch(length: number): Float32Array {
    if (this.scratchBuffer.length < length) this.scratchBuffer = new Float32Array(length);
    return this.scratchBuffer;
  }
}
