import * as tf from "@tensorflow/tfjs";

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

  constructor(model: tf.LayersModel) {
    this.vars = model.nonTrainableWeights.filter((w) => w.dtype === "float32");
    this.sizes = this.vars.map((v) => (v.shape as number[]).reduce((a, b) => a * b, 1));
    this.length = this.sizes.reduce((a, b) => a + b, 0);
  }

  /** Layer names holding state, for messages. */
  get names(): string[] {
    return this.vars.map((v) => v.originalName);
  }

  /** Every state value, laid out flat in order. */
  snapshot(): Float32Array {
    const out = new Float32Array(this.length);
    let off = 0;
    this.vars.forEach((v, i) => {
      out.set(v.read().dataSync() as Float32Array, off);
      off += this.sizes[i]!;
    });
    return out;
  }

  /** out = weight x (now - before): this replica's share of the change since `before`. */
  writeChange(before: Float32Array, weight: number, out: Float32Array): void {
    const now = this.snapshot();
    for (let i = 0; i < this.length; i++) out[i] = weight * (now[i]! - before[i]!);
  }

  /** Sets the state to before + change (change: the replicas' summed shares), or to `before` alone. */
  set(before: Float32Array, change?: Float32Array): void {
    if (this.length === 0) return;
    const values = change ? before.map((b, i) => b + change[i]!) : before;
    let off = 0;
    this.vars.forEach((v, i) => {
      const t = tf.tensor(values.subarray(off, off + this.sizes[i]!), v.shape as number[], "float32");
      v.write(t);
      t.dispose();
      off += this.sizes[i]!;
    });
  }
}
