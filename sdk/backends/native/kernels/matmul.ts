import type * as tf from "@tensorflow/tfjs";
import { ACTIVATION, allFloat32, kernel } from "./common";
import type { NativeBackend } from "../backend";

/** a x b over the last two axes, batched; one operand may have a batch of 1 (broadcast). */
function matmul(backend: NativeBackend, a: tf.TensorInfo, b: tf.TensorInfo, transposeA: boolean, transposeB: boolean) {
  const ar = a.shape.length;
  const br = b.shape.length;
  if (ar < 2 || br < 2) return null;
  const M = transposeA ? a.shape[ar - 1]! : a.shape[ar - 2]!;
  const K = transposeA ? a.shape[ar - 2]! : a.shape[ar - 1]!;
  const K2 = transposeB ? b.shape[br - 1]! : b.shape[br - 2]!;
  const N = transposeB ? b.shape[br - 2]! : b.shape[br - 1]!;
  if (K !== K2) return null;
  const outerA = a.shape.slice(0, -2);
  const outerB = b.shape.slice(0, -2);
  const batchA = outerA.reduce((x, y) => x * y, 1);
  const batchB = outerB.reduce((x, y) => x * y, 1);
  // Same batch shape, or one side a single matrix broadcast over the other's batch; other
  // broadcasts go to the stock kernel.
  let outer: number[];
  if (outerA.length === outerB.length && outerA.every((d, i) => d === outerB[i])) outer = outerA;
  else if (batchA === 1 && outerA.length <= outerB.length) outer = outerB;
  else if (batchB === 1 && outerB.length <= outerA.length) outer = outerA;
  else return null;
  const batch = Math.max(batchA, batchB);
  const out = backend.output([...outer, M, N]);
  backend.addon.batchMatMul(
    backend.values(a),
    backend.values(b),
    out.values,
    batch,
    batchA === 1 ? 0 : M * K,
    batchB === 1 ? 0 : K * N,
    M,
    N,
    K,
    transposeA ? 1 : 0,
    transposeB ? 1 : 0,
  );
  return { ...out, M, N, rows: batch * M };
}

export const batchMatMulKernel = kernel("BatchMatMul", ({ inputs, backend, attrs }) => {
  const { a, b } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
  if (!allFloat32(a, b)) return null;
  return matmul(backend, a, b, Boolean(attrs.transposeA), Boolean(attrs.transposeB))?.info ?? null;
});

export const fusedMatMulKernel = kernel("_FusedMatMul", ({ inputs, backend, attrs }) => {
  const { a, b, bias, preluActivationWeights } = inputs as Record<string, tf.TensorInfo | undefined>;
  const activation = (attrs.activation as string | undefined) ?? "linear";
  const act = ACTIVATION[activation];
  if (!a || !b || preluActivationWeights || act === undefined || !allFloat32(a, b, bias)) return null;
  if (
    bias &&
    bias.shape.reduce((x, y) => x * y, 1) !==
      (attrs.transposeB ? b.shape[b.shape.length - 2] : b.shape[b.shape.length - 1])
  )
    return null;
  const r = matmul(backend, a, b, Boolean(attrs.transposeA), Boolean(attrs.transposeB));
  if (!r) return null;
  backend.addon.biasActivation(
    r.values,
    bias ? backend.values(bias) : null,
    r.rows,
    r.N,
    act,
    Number(attrs.leakyreluAlpha ?? 0.2),
  );
  return r.info;
});
