import * as tf from "@tensorflow/tfjs";
import { SelfAttention } from "./attention-layer";

type T = tf.SymbolicTensor;
const apply = (layer: tf.layers.Layer, x: T | T[]): T => layer.apply(x) as T;

/**
 * Models whose layers do not form a chain, as people bring them to stage strategies: residual
 * blocks (a skip connection beside the main path, merged by tf.layers.add). Seeded: the same
 * weights every time they are built.
 */

/** conv-BN-relu-conv-BN + shortcut, then relu; a strided block takes a 1x1 projection as its shortcut. */
function residualBlock(x: T, filters: number, seed: number, stride = 1): T {
  const conv = (k: number, s: number, i: number) => tf.layers.conv2d({ filters, kernelSize: k, strides: s, padding: "same", useBias: false, kernelInitializer: tf.initializers.heNormal({ seed: seed + i }) });
  let h = apply(conv(3, stride, 0), x);
  h = apply(tf.layers.batchNormalization({ momentum: 0.9 }), h);
  h = apply(tf.layers.activation({ activation: "relu" }), h);
  h = apply(conv(3, 1, 1), h);
  h = apply(tf.layers.batchNormalization({ momentum: 0.9 }), h);
  const shortcut = stride === 1 ? x : apply(conv(1, stride, 2), x);
  return apply(tf.layers.activation({ activation: "relu" }), apply(tf.layers.add(), [shortcut, h]));
}

/** A small ResNet-style CNN: a stem, two residual blocks and a strided one with a projection, pooling, softmax. */
export function residualCnn(seed = 1, size = 8, classes = 3): tf.LayersModel {
  const input = tf.input({ shape: [size, size, 1] });
  let h = apply(tf.layers.conv2d({ filters: 4, kernelSize: 3, padding: "same", useBias: false, kernelInitializer: tf.initializers.heNormal({ seed }) }), input);
  h = apply(tf.layers.batchNormalization({ momentum: 0.9 }), h);
  h = apply(tf.layers.activation({ activation: "relu" }), h);
  h = residualBlock(h, 4, seed + 10);
  h = residualBlock(h, 4, seed + 20);
  h = residualBlock(h, 8, seed + 30, 2);
  h = apply(tf.layers.globalAveragePooling2d({}), h);
  const out = apply(tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 40 }) }), h);
  return tf.model({ inputs: input, outputs: out, name: "residual_cnn" });
}

/** Pre-norm transformer blocks: x + attention(norm(x)), then x + mlp(norm(x)); pooled to a softmax. */
export function transformerStack(seed = 1, steps = 4, width = 8, classes = 3, blocks = 2): tf.LayersModel {
  const input = tf.input({ shape: [steps, width] });
  let x: T = input;
  for (let b = 0; b < blocks; b++) {
    const s = seed + 10 * b;
    const attended = apply(new SelfAttention({ seed: s }), apply(tf.layers.layerNormalization({}), x));
    x = apply(tf.layers.add(), [x, attended]);
    let f = apply(tf.layers.layerNormalization({}), x);
    f = apply(tf.layers.dense({ units: 2 * width, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: s + 5 }) }), f);
    f = apply(tf.layers.dense({ units: width, kernelInitializer: tf.initializers.glorotUniform({ seed: s + 6 }) }), f);
    x = apply(tf.layers.add(), [x, f]);
  }
  const pooled = apply(tf.layers.globalAveragePooling1d({}), x);
  const out = apply(tf.layers.dense({ units: classes, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 99 }) }), pooled);
  return tf.model({ inputs: input, outputs: out, name: "transformer_stack" });
}
