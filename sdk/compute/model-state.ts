import * as tf from "@tensorflow/tfjs";
import { readConcat, tensorsFromFlat } from "./device-io";

type LayerVariable = tf.LayersModel["weights"][number];

/**
 * A model's state beyond its trainable weights: the float non-trainable weights, such as
 * BatchNormalization's moving mean and variance (a training forward pass updates them) and the
 * weights of frozen layers. Replicas agree on it by summing weighted changes: a frozen weight
 * changes by exactly zero, so it stays bit-identical.
 */
export class ModelState {
  private readonly vars: LayerVariable[];
  /** Each state tensor's number of values, in order. */
  readonly sizes: number[];
  readonly length: number;
  /** The values on the host, while they are the state's (after set() or a read; null once a forward pass moved them). */
  private known: Float32Array | null = null;

  constructor(model: tf.LayersModel) {
    this.vars = model.nonTrainableWeights.filter((w) => w.dtype === "float32");
    this.sizes = this.vars.map((v) => (v.shape as number[]).reduce((a, b) => a * b, 1));
    this.length = this.sizes.reduce((a, b) => a + b, 0);
  }

  /** Layer names holding state, for messages. */
  get names(): string[] {
    return this.vars.map((v) => v.originalName);
  }

  /** The state's tensors, in order (for one fused read with a step's gradient). */
  tensors(): tf.Tensor[] {
    return this.vars.map((v) => v.read());
  }

  /**
   * Every state value, laid out flat in order. The values last set are kept on the host, so a
   * step on a device does not read back what it uploaded itself.
   */
  async snapshot(): Promise<Float32Array> {
    if (this.length === 0) return new Float32Array(0);
    this.known ??= await readConcat(this.tensors());
    return this.known.slice();
  }

  /** The state's values now, laid out flat (the native step's forward pass moves them in place, on the host). */
  values(): Float32Array {
    const out = new Float32Array(this.length);
    let at = 0;
    for (const v of this.vars) {
      const d = v.read().dataSync() as Float32Array;
      out.set(d, at);
      at += d.length;
    }
    return out;
  }

  /** Puts back values kept with tensors().map(clone) (where they live: no read back). */
  restore(kept: readonly tf.Tensor[]): void {
    this.vars.forEach((v, i) => v.write(kept[i]!));
    this.known = null;
  }

  /** A forward pass in training mode moved the state: the host's copy is stale. */
  moved(): void {
    this.known = null;
  }

  /** out = weight x (now - before): this replica's share of the change since `before` (`now` as read after the forward pass). */
  writeChange(before: Float32Array, weight: number, out: Float32Array, now: Float32Array): void {
    for (let i = 0; i < this.length; i++) out[i] = weight * (now[i]! - before[i]!);
  }

  /** Sets the state to before + change (change: the replicas' summed shares), or to `before` alone. */
  set(before: Float32Array, change?: Float32Array): void {
    if (this.length === 0) return;
    const values = change ? before.map((b, i) => b + change[i]!) : before.slice();
    const ts = tensorsFromFlat(
      values,
      this.vars.map((v) => v.shape as number[]),
    );
    this.vars.forEach((v, i) => v.write(ts[i]!));
    tf.dispose(ts);
    this.known = values;
  }
}
