import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";

type LayerVariable = tf.LayersModel["weights"][number];

/** One BatchNormalization layer as synchronized normalization drives it. */
export interface Norm {
  layer: tf.layers.Layer;
  channels: number;
  axis: number;
  epsilon: number;
  momentum: number;
  gamma: LayerVariable | null;
  beta: LayerVariable | null;
  movingMean: LayerVariable;
  movingVariance: LayerVariable;
}

/** What a forward pass of the step uses and leaves: each layer's global mean and variance where known, and its local sums. */
export interface Pass {
  mean: Array<tf.Tensor | null>;
  variance: Array<tf.Tensor | null>;
  sum: Array<tf.Tensor | null>;
  squares: Array<tf.Tensor | null>;
  count: number[];
}

/**
 * Replaces a BatchNormalization layer's training-mode call with one that takes the step's
 * statistics (`pass()`, the k-th layer's) where they are known; outside a synchronized step it
 * calls the layer's own.
 */
export function patchNorm(layer: tf.layers.Layer, k: number, pass: () => Pass | null): Norm {
  const cfg = layer.getConfig() as { axis?: number; epsilon?: number; momentum?: number };
  const weight = (name: string) =>
    layer.weights.find((w) => w.originalName.endsWith(`/${name}`) || w.name.includes(name)) ?? null;
  const movingMean = weight("moving_mean")!;
  if ((cfg.axis ?? -1) !== -1 && cfg.axis !== (layer.inputSpec?.[0]?.ndim ?? 0) - 1) {
    // TF.js's own layer yields NaN in training on another axis (its broadcast path); nothing to be equal to.
    throw new ModelError(
      `batchNorm "sync" normalizes channels-last BatchNormalization layers (axis -1); "${layer.name}" normalizes axis ${cfg.axis}`,
      { hint: 'use axis -1 (TF.js\'s default), or batchNorm "replica"' },
    );
  }
  const norm: Norm = {
    layer,
    channels: movingMean.shape[0]!,
    axis: cfg.axis ?? -1,
    epsilon: cfg.epsilon ?? 1e-3,
    momentum: cfg.momentum ?? 0.99,
    gamma: weight("gamma"),
    beta: weight("beta"),
    movingMean,
    movingVariance: weight("moving_variance")!,
  };
  const original = layer.call.bind(layer);
  layer.call = (inputs: tf.Tensor | tf.Tensor[], kwargs: Record<string, unknown>): tf.Tensor | tf.Tensor[] => {
    const p = pass();
    if (!p || !kwargs?.training) return original(inputs, kwargs);
    const x = Array.isArray(inputs) ? inputs[0]! : inputs;
    const axis = norm.axis >= 0 ? norm.axis : norm.axis + x.rank;
    const axes = Array.from({ length: x.rank }, (_, i) => i).filter((i) => i !== axis);
    const shape = Array.from({ length: x.rank }, (_, i) => (i === axis ? norm.channels : 1));
    const known = p.mean[k] ?? null;
    // Kept past the model's own scope (a model's call disposes what its layers made), disposed by within().
    p.sum[k] = tf.keep(tf.sum(x, axes));
    p.count[k] = x.size / norm.channels;
    if (known) p.squares[k] = tf.keep(tf.sum(tf.square(tf.sub(x, tf.reshape(known, shape))), axes));
    let mean = known;
    let variance = p.variance[k] ?? null;
    if (!mean || !variance) {
      // A statistic not known yet: this pass is only for an earlier layer's sums, so the batch's own serve.
      const m = tf.moments(x, axes);
      mean ??= m.mean;
      variance ??= m.variance;
    }
    // TF.js's own kernel on 1-D statistics, as the layer computes it for channels last (the only axis load admits).
    return tf.batchNorm(x, mean, variance, norm.beta?.read(), norm.gamma?.read(), norm.epsilon);
  };
  return norm;
}
