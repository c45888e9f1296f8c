import type * as tf from "@tensorflow/tfjs";

/**
 * Forward floating-point operations per sample of one layer (a multiply-add counts 2), from its
 * class, config and shapes. The backward pass costs about twice the forward (gradients of the
 * input and of the weights). An estimate for planning, not a measurement.
 */
export function forwardFlops(layer: tf.layers.Layer, inShape: ReadonlyArray<number | null>, outShape: ReadonlyArray<number | null>): number {
  const size = (s: ReadonlyArray<number | null>): number => s.slice(1).reduce<number>((a, d) => a * (d ?? 1), 1);
  const out = size(outShape);
  const cfg = layer.getConfig() as Record<string, unknown>;
  const kernel = (): [number, number] => {
    const k = cfg.kernelSize as number | number[];
    return Array.isArray(k) ? [k[0]!, k[1] ?? k[0]!] : [k, k];
  };
  const cin = inShape[inShape.length - 1] ?? 1;
  switch (layer.getClassName()) {
    case "Dense":
      return 2 * (out / (outShape[outShape.length - 1] ?? 1)) * cin * (cfg.units as number) + out;
    case "Conv2D": {
      const [kh, kw] = kernel();
      return 2 * kh * kw * cin * out + out;
    }
    case "DepthwiseConv2D": {
      const [kh, kw] = kernel();
      return 2 * kh * kw * out;
    }
    case "SeparableConv2D": {
      const [kh, kw] = kernel();
      const mult = (cfg.depthMultiplier as number | undefined) ?? 1;
      const spatial = out / (outShape[outShape.length - 1] ?? 1);
      return 2 * kh * kw * cin * mult * spatial + 2 * cin * mult * out + out;
    }
    case "MaxPooling2D":
    case "AveragePooling2D": {
      const p = cfg.poolSize as number | number[];
      const [ph, pw] = Array.isArray(p) ? [p[0]!, p[1] ?? p[0]!] : [p, p];
      return ph * pw * out;
    }
    case "BatchNormalization":
      return 4 * out;
    case "Flatten":
    case "Reshape":
    case "InputLayer":
      return 0;
    default:
      return out;
  }
}
