import * as tf from "@tensorflow/tfjs";

/**
 * Single-head self-attention as a user writes a custom layer: its own query, key, value and
 * output projections, softmax(QK^T / sqrt(d)) V. Registered for workers to build by name
 * (.modules([...]) with this file's built JavaScript).
 */
export class SelfAttention extends tf.layers.Layer {
  static className = "SelfAttention";
  private projections: tf.LayerVariable[] = [];
  private readonly seed: number;

  constructor(config: { seed?: number; name?: string } = {}) {
    super(config);
    this.seed = config.seed ?? 1;
  }

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const shape = inputShape as tf.Shape;
    const d = shape[shape.length - 1]!;
    this.projections = ["query", "key", "value", "output"].map((name, i) => this.addWeight(name, [d, d], "float32", tf.initializers.glorotUniform({ seed: this.seed + i })));
    this.built = true;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape | tf.Shape[] {
    return inputShape;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = (Array.isArray(inputs) ? inputs[0]! : inputs) as tf.Tensor3D;
      const [b, t, d] = x.shape;
      const project = (w: tf.LayerVariable, v: tf.Tensor3D): tf.Tensor3D => tf.reshape(tf.matMul(tf.reshape(v, [b * t, d]), w.read() as tf.Tensor2D), [b, t, d]);
      const [wq, wk, wv, wo] = this.projections as [tf.LayerVariable, tf.LayerVariable, tf.LayerVariable, tf.LayerVariable];
      const scores = tf.div(tf.matMul(project(wq, x), project(wk, x), false, true), Math.sqrt(d));
      return project(wo, tf.matMul(tf.softmax(scores), project(wv, x)));
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), seed: this.seed };
  }
}

tf.serialization.registerClass(SelfAttention);
