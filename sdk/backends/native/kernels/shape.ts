import * as tf from "@tensorflow/tfjs";
import { allFloat32, kernel } from "./common";

const MAX_RANK = 6;

/**
 * Transpose, Tile and SplitV, which TF.js's cpu kernels compute element by element: a
 * transformer's step by autodiff spent 0.2 s in Transpose, a ResNet-20's 0.1 s in Tile (its
 * BatchNormalization gradients tile), a GRU's 0.3 s in SplitV (its gates, split every step).
 */
export const shapeKernels: tf.KernelConfig[] = [
  kernel("Transpose", ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    const perm = attrs.perm as number[];
    if (!allFloat32(x) || x.shape.length === 0 || x.shape.length > MAX_RANK) return null;
    const out = backend.output(perm.map((p) => x.shape[p]!));
    backend.addon.transpose(backend.values(x), out.values, Int32Array.from(x.shape), Int32Array.from(perm));
    return out.info;
  }),
  kernel("Tile", ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    const reps = attrs.reps as number[];
    if (!allFloat32(x) || x.shape.length === 0 || x.shape.length > MAX_RANK || reps.length !== x.shape.length)
      return null;
    const out = backend.output(x.shape.map((d, i) => d * reps[i]!));
    backend.addon.tile(backend.values(x), out.values, Int32Array.from(x.shape), Int32Array.from(reps));
    return out.info;
  }),
];

/** SplitV: each piece a block of every outer row (outputs several tensors, so it is a kernel of its own). */
export const splitKernel: tf.KernelConfig = {
  kernelName: "SplitV",
  backendName: "native",
  kernelFunc: (params) => {
    const { inputs, backend, attrs } = params as unknown as {
      inputs: { x: tf.TensorInfo };
      backend: import("../backend").NativeBackend;
      attrs: tf.NamedAttrMap;
    };
    const { x } = inputs;
    const axis = tf.util.parseAxisParam(attrs.axis as number, x.shape)[0]!;
    const sizes = tf.backend_util.prepareSplitSize(
      x as unknown as tf.Tensor,
      attrs.numOrSizeSplits as number | number[],
      axis,
    );
    if (x.dtype !== "float32")
      return (tf.getKernel("SplitV", "cpu")!.kernelFunc as (p: unknown) => tf.TensorInfo[])(params);
    const outer = tf.util.sizeFromShape(x.shape.slice(0, axis));
    const inner = tf.util.sizeFromShape(x.shape.slice(axis + 1));
    const row = x.shape[axis]! * inner;
    const src = backend.values(x);
    let at = 0;
    return sizes.map((n) => {
      const out = backend.output(x.shape.map((d, i) => (i === axis ? n : d)));
      const w = n * inner;
      for (let r = 0; r < outer; r++) out.values.set(src.subarray(r * row + at, r * row + at + w), r * w);
      at += w;
      return out.info;
    });
  },
};
