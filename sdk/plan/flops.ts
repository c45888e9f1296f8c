import type * as tf from "@tensorflow/tfjs";
import { perSample } from "./per-sample";

/**
 * Forward floating-point operations per sample of one layer (a multiply-add counts 2), from its
 * class, config and shapes. The backward pass costs about twice the forward (gradients of the
 * input and of the weights). An estimate for planning, not a measurement.
 */
// long: one case per layer class, read as one table
export function forwardFlops(
  layer: tf.layers.Layer,
  inShape: ReadonlyArray<number | null>,
  outShape: ReadonlyArray<number | null>,
): number {
  const out = perSample(outShape);
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
    case "Conv1D":
      return 2 * kernel()[0] * cin * out + out;
    case "LSTM":
    case "GRU":
    case "SimpleRNN":
    case "MultiHeadAttention":
      return sequenceFlops(layer.getClassName(), cfg, inShape, outShape);
    case "Dot":
      // [m, k] . [k, n] per sample: each output a k-long dot product.
      return 2 * out * cin;
    case "LayerNormalization":
      return 8 * out;
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
    case "AveragePooling2D":
    case "MaxPooling1D":
    case "AveragePooling1D": {
      const p = cfg.poolSize as number | number[];
      const [ph, pw] = Array.isArray(p)
        ? [p[0]!, p[1] ?? (layer.getClassName().endsWith("1D") ? 1 : p[0]!)]
        : [p, layer.getClassName().endsWith("1D") ? 1 : p];
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

/** Recurrent layers and attention, whose cost grows with the sequence: per sample, forward. */
function sequenceFlops(
  cls: string,
  cfg: Record<string, unknown>,
  inShape: ReadonlyArray<number | null>,
  outShape: ReadonlyArray<number | null>,
): number {
  const T = inShape[1] ?? 1;
  const cin = inShape[inShape.length - 1] ?? 1;
  if (cls === "MultiHeadAttention") {
    // Self-attention's cost (the query's length for the keys' too): four projections, scores, softmax, context.
    const [H, dk, dv] = [
      cfg.numHeads as number,
      cfg.keyDim as number,
      (cfg.valueDim as number | null) ?? (cfg.keyDim as number),
    ];
    const outDim = outShape[outShape.length - 1] ?? cin;
    return 2 * T * cin * H * (2 * dk + dv) + 2 * T * H * dv * outDim + H * T * T * (2 * dk + 2 * dv + 5);
  }
  // Every step: the input and the state through G gates' kernels, and the gates' elementwise work.
  const G = cls === "LSTM" ? 4 : cls === "GRU" ? 3 : 1;
  const H = cfg.units as number;
  return T * (2 * (cin + H) * G * H + 10 * G * H);
}
