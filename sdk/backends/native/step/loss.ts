import type { LossName } from "../../../protocol/loss-names";

/** The losses a compiled step computes itself; any other makes the model fall back to autodiff. */
export const STEP_LOSSES = ["categoricalCrossentropy", "sparseCategoricalCrossentropy", "meanSquaredError"] as const;
export type StepLoss = (typeof STEP_LOSSES)[number];

export function isStepLoss(name: LossName): name is StepLoss {
  return (STEP_LOSSES as readonly string[]).includes(name);
}

/** How many label values a batch of `rows` output rows takes. */
export function labelsPerRow(loss: StepLoss, cols: number): number {
  return loss === "sparseCategoricalCrossentropy" ? 1 : cols;
}

/**
 * The mean loss over `rows` rows of predictions p (each of `cols` values) against targets t,
 * and dL/dp x scale into dp: the loss TF.js's layers compute (clipping and normalising as they
 * do, with their gradients), so a compiled step learns what model.fit would.
 */
export function lossAndGradient(loss: StepLoss, p: Float32Array, t: Float32Array, dp: Float32Array, rows: number, cols: number, eps: number, scale: number): number {
  if (loss === "meanSquaredError") return meanSquared(p, t, dp, rows, cols, scale);
  return crossentropy(p, t, dp, rows, cols, eps, scale, loss === "sparseCategoricalCrossentropy");
}

function meanSquared(p: Float32Array, t: Float32Array, dp: Float32Array, rows: number, cols: number, scale: number): number {
  let total = 0;
  // d/dp mean_j (p_j - t_j)^2 = 2 (p_j - t_j) / cols
  const g = Math.fround(Math.fround(2 / cols) * Math.fround(scale / rows));
  for (let i = 0; i < rows * cols; i++) {
    const d = Math.fround(p[i]! - t[i]!);
    total += d * d;
    dp[i] = Math.fround(d * g);
  }
  return total / (rows * cols);
}

/**
 * -sum_j t_j log(clip(p_j / sum(p))), per row. Sparse targets hold a class index per row (an
 * index outside [0, cols) is a row of zeros, as tf.oneHot makes it) and clip p first, as TF.js does.
 */
function crossentropy(p: Float32Array, t: Float32Array, dp: Float32Array, rows: number, cols: number, eps: number, scale: number, sparse: boolean): number {
  const hi = Math.fround(1 - eps);
  const g = Math.fround(scale / rows);
  const clip = (v: number): number => Math.min(Math.max(v, eps), hi);
  // This row's predictions as the loss takes them (sparse: clipped first), its targets, and dL/d(p / sum p)
  const pre = new Float64Array(cols);
  const y = new Float64Array(cols);
  const dq = new Float64Array(cols);
  let total = 0;
  for (let r = 0; r < rows; r++) {
    const o = r * cols;
    let s = 0;
    for (let c = 0; c < cols; c++) {
      pre[c] = sparse ? clip(p[o + c]!) : p[o + c]!;
      y[c] = sparse ? (c === Math.floor(t[r]!) ? 1 : 0) : t[o + c]!;
      s += pre[c]!;
    }
    const sum = Math.fround(s);
    let dot = 0;
    for (let c = 0; c < cols; c++) {
      const v = Math.fround(pre[c]! / sum);
      total -= y[c]! * Math.log(clip(v));
      // clipByValue passes the gradient where eps <= v <= 1 - eps, and nothing elsewhere
      dq[c] = v >= eps && v <= hi ? (-y[c]! / clip(v)) * g : 0;
      dot += dq[c]! * pre[c]!;
    }
    // d(p_c / sum)/dp: dq_c / sum - sum_k dq_k p_k / sum^2; a sparse target's first clip passes it only inside the range
    for (let c = 0; c < cols; c++) {
      const inside = !sparse || (p[o + c]! >= eps && p[o + c]! <= hi);
      dp[o + c] = inside ? Math.fround(dq[c]! / sum - dot / (sum * sum)) : 0;
    }
  }
  return total / rows;
}
