import * as tf from "@tensorflow/tfjs";

/**
 * Custom layers as users write them, in a module workers import with .modules([...]):
 * registered with tf.serialization.registerClass, built by name on the workers.
 */

/** y = x * scale, one trainable scale per feature. */
export class LearnedScale extends tf.layers.Layer {
  static className = "LearnedScale";
  private scale: tf.LayerVariable | null = null;

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const shape = inputShape as tf.Shape;
    this.scale = this.addWeight("scale", [shape[shape.length - 1]!], "float32", tf.initializers.ones());
    this.built = true;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => tf.mul(Array.isArray(inputs) ? inputs[0]! : inputs, this.scale!.read()));
  }
}

/** Passes its input through, but throws inside the step when a sample holds the value `trigger`: a bug in a user's layer. */
export class Tripwire extends tf.layers.Layer {
  static className = "Tripwire";
  readonly trigger: number;

  constructor(config: { trigger?: number; name?: string } = {}) {
    super(config);
    this.trigger = config.trigger ?? 999;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    const x = Array.isArray(inputs) ? inputs[0]! : inputs;
    if ((x.dataSync() as Float32Array).includes(this.trigger)) throw new RangeError(`Tripwire: a sample holds ${this.trigger}`);
    return tf.clone(x);
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), trigger: this.trigger };
  }
}

/** Passes its input through, but throws when a pass gets more than `max` samples: proof of how a step was cut. */
export class BatchCap extends tf.layers.Layer {
  static className = "BatchCap";
  readonly max: number;

  constructor(config: { max?: number; name?: string } = {}) {
    super(config);
    this.max = config.max ?? 1;
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    const x = Array.isArray(inputs) ? inputs[0]! : inputs;
    if (x.shape[0]! > this.max) throw new RangeError(`BatchCap: a pass of ${x.shape[0]} samples, above ${this.max}`);
    return tf.clone(x);
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), max: this.max };
  }
}

tf.serialization.registerClass(LearnedScale);
tf.serialization.registerClass(BatchCap);
tf.serialization.registerClass(Tripwire);
