import * as tf from "@tensorflow/tfjs";
import { REDUCE } from "../addon";
import { allFloat32, kernel } from "./common";

/** [outer, reduce, inner] when the reduced axes are one contiguous block; else null (stock kernel). */
export function reduceView(
  shape: readonly number[],
  axes: number[],
): { outer: number; reduce: number; inner: number } | null {
  const sorted = [...new Set(axes)].sort((x, y) => x - y);
  if (sorted.length === 0) return null;
  for (let i = 1; i < sorted.length; i++) if (sorted[i] !== sorted[i - 1]! + 1) return null;
  const first = sorted[0]!;
  const last = sorted[sorted.length - 1]!;
  const size = (from: number, to: number): number => shape.slice(from, to).reduce((a, b) => a * b, 1);
  return { outer: size(0, first), reduce: size(first, last + 1), inner: size(last + 1, shape.length) };
}

function reduceKernel(name: "Sum" | "Max" | "Min" | "Mean", axisAttr: "axis" | "reductionIndices") {
  const op = REDUCE[name];
  return kernel(name, ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    if (!allFloat32(x) || x.shape.length === 0) return null;
    const axes = tf.util.parseAxisParam(attrs[axisAttr] as number | number[], x.shape);
    const view = reduceView(x.shape, axes);
    if (!view) return null;
    const keep = Boolean(attrs.keepDims);
    const outShape = keep
      ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d))
      : x.shape.filter((_, i) => !axes.includes(i));
    const out = backend.output(outShape);
    backend.addon.reduce(op, backend.values(x), out.values, view.outer, view.reduce, view.inner);
    return out.info;
  });
}

export const reduceKernels: tf.KernelConfig[] = [
  reduceKernel("Sum", "axis"),
  reduceKernel("Mean", "axis"),
  reduceKernel("Max", "reductionIndices"),
  reduceKernel("Min", "axis"),
  kernel("Softmax", ({ inputs, backend, attrs }) => {
    const { logits } = inputs as { logits: tf.TensorInfo };
    const rank = logits.shape.length;
    const dim = Number(attrs.dim ?? -1);
    if (!allFloat32(logits) || rank === 0 || (dim !== -1 && dim !== rank - 1)) return null;
    const cols = logits.shape[rank - 1]!;
    const rows = logits.shape.slice(0, -1).reduce((a, b) => a * b, 1);
    const out = backend.output([...logits.shape]);
    backend.addon.softmax(backend.values(logits), out.values, rows, cols);
    return out.info;
  }),
];
