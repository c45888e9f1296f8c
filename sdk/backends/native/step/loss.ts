import type { LossName } from "../../../protocol/loss-names";

/** Every loss model.compile takes by name is one a compiled step computes. */
export type StepLoss = LossName;

/** How many target values a batch of `rows` output rows of `cols` takes. */
export function labelsPerRow(loss: StepLoss, cols: number): number {
  return loss === "sparseCategoricalCrossentropy" ? 1 : cols;
}

const clip = (v: number, lo: number, hi: number): number => (v < lo ? lo : v > hi ? hi : v);
/** tf.abs's gradient: 1 above zero, -1 elsewhere (step(x, -1)). */
const absSlope = (v: number): number => (v > 0 ? 1 : -1);
const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));

/**
 * The mean over rows of the loss of each row of predictions p (`cols` values) against targets t,
 * each row's loss weighted by rowWeight (classWeight) where given, and dL/dp x scale into dp: the
 * loss tfjs-layers' losses.ts computes, with the gradients autodiff takes through its clips
 * (zero where a clip bites) and its abs (-1 at zero), so a compiled step learns what model.fit would.
 */
export function lossAndGradient(
  loss: StepLoss,
  p: Float32Array,
  t: Float32Array,
  dp: Float32Array,
  rows: number,
  cols: number,
  eps: number,
  scale: number,
  rowWeight: Float32Array | null = null,
): number {
  const row = ROWS[loss];
  let total = 0;
  for (let r = 0; r < rows; r++) {
    const w = rowWeight ? rowWeight[r]! : 1;
    total += w * row({ p, t, dp, r, o: r * cols, cols, eps, g: (w * scale) / rows });
  }
  return total / rows;
}

/** Row r of the predictions (from offset o), and g: the factor its loss's gradient is written with. */
interface Row {
  p: Float32Array;
  t: Float32Array;
  dp: Float32Array;
  r: number;
  o: number;
  cols: number;
  eps: number;
  g: number;
}

/** A loss of one row: the mean over its values of f(p, t), whose slope df/dp is written times g / cols. */
function meanOf(f: (p: number, t: number, eps: number) => [value: number, slope: number]): (row: Row) => number {
  return ({ p, t, dp, o, cols, eps, g }) => {
    let l = 0;
    for (let c = 0; c < cols; c++) {
      const [v, d] = f(p[o + c]!, t[o + c]!, eps);
      l += v;
      dp[o + c] = (d * g) / cols;
    }
    return l / cols;
  };
}

/** Each loss's row loss and gradient. */
const ROWS: Readonly<Record<StepLoss, (row: Row) => number>> = {
  meanSquaredError: meanOf((p, t) => [(p - t) * (p - t), 2 * (p - t)]),
  meanAbsoluteError: meanOf((p, t) => [Math.abs(p - t), absSlope(p - t)]),
  meanAbsolutePercentageError: meanOf((p, t, eps) => {
    const ct = clip(Math.abs(t), eps, Number.MAX_VALUE);
    const q = (t - p) / ct;
    return [100 * Math.abs(q), (100 * absSlope(q)) / -ct];
  }),
  meanSquaredLogarithmicError: meanOf((p, t, eps) => {
    const cp = clip(p, eps, Number.MAX_VALUE);
    const d = Math.log(1 + cp) - Math.log(1 + clip(t, eps, Number.MAX_VALUE));
    return [d * d, p >= eps ? (2 * d) / (1 + cp) : 0];
  }),
  hinge: meanOf((p, t) => {
    const m = 1 - t * p;
    return [m > 0 ? m : 0, m > 0 ? -t : 0];
  }),
  squaredHinge: meanOf((p, t) => {
    const m = 1 - t * p;
    return [m > 0 ? m * m : 0, m > 0 ? 2 * m * -t : 0];
  }),
  logcosh: meanOf((p, t) => [p - t + softplus(-2 * (p - t)) - Math.log(2), 1 - 2 * sigmoid(-2 * (p - t))]),
  poisson: meanOf((p, t, eps) => [p - t * Math.log(eps + p), 1 - t / (eps + p)]),
  binaryCrossentropy: meanOf((p, t, eps) => {
    const y = clip(p, eps, 1 - eps);
    const z = Math.log(y / (1 - y));
    const value = Math.max(z, 0) - z * t + Math.log1p(Math.exp(-Math.abs(z)));
    // dl/dz = sigmoid(z) - t; dz/dy = 1 / (y (1 - y)); the clip passes inside [eps, 1 - eps].
    return [value, p >= eps && p <= 1 - eps ? (sigmoid(z) - t) / (y * (1 - y)) : 0];
  }),
  categoricalHinge,
  kullbackLeiblerDivergence,
  cosineProximity: cosine,
  categoricalCrossentropy: (row) => crossentropy(row, false),
  sparseCategoricalCrossentropy: (row) => crossentropy(row, true),
};

/** max(0, 1 + max((1 - t) p) - sum(t p)); tf.max passes its gradient to every element equal to the maximum. */
function categoricalHinge({ p, t, dp, o, cols, g }: Row): number {
  let pos = 0;
  let neg = -Infinity;
  for (let c = 0; c < cols; c++) {
    pos += t[o + c]! * p[o + c]!;
    neg = Math.max(neg, (1 - t[o + c]!) * p[o + c]!);
  }
  const v = 1 + neg - pos;
  for (let c = 0; c < cols; c++) {
    const atMax = (1 - t[o + c]!) * p[o + c]! === neg ? 1 - t[o + c]! : 0;
    dp[o + c] = v > 0 ? (atMax - t[o + c]!) * g : 0;
  }
  return v > 0 ? v : 0;
}

/** sum(t log(clip(t) / clip(p))), both clipped to [eps, 1]. */
function kullbackLeiblerDivergence({ p, t, dp, o, cols, eps, g }: Row): number {
  let l = 0;
  for (let c = 0; c < cols; c++) {
    const pv = p[o + c]!;
    const tv = t[o + c]!;
    const cp = clip(pv, eps, 1);
    l += tv * Math.log(clip(tv, eps, 1) / cp);
    dp[o + c] = pv >= eps && pv <= 1 ? (-tv / cp) * g : 0;
  }
  return l;
}

function softplus(x: number): number {
  return x > 0 ? x + Math.log1p(Math.exp(-x)) : Math.log1p(Math.exp(x));
}

/** -sum(l2normalize(t) l2normalize(p)); the norm is sqrt(max(sum of squares, eps)). */
function cosine({ p, t, dp, o, cols, eps, g }: Row): number {
  let pp = 0;
  let tt = 0;
  for (let c = 0; c < cols; c++) {
    pp += p[o + c]! * p[o + c]!;
    tt += t[o + c]! * t[o + c]!;
  }
  const pn = Math.sqrt(Math.max(pp, eps));
  const tn = Math.sqrt(Math.max(tt, eps));
  let dot = 0;
  for (let c = 0; c < cols; c++) dot += (t[o + c]! / tn) * (p[o + c]! / pn);
  // tf.maximum passes the gradient to the sum of squares where it is >= eps.
  const through = pp >= eps;
  for (let c = 0; c < cols; c++) {
    const d = -(t[o + c]! / tn) / pn + (through ? (dot * p[o + c]!) / (pn * pn) : 0);
    dp[o + c] = d * g;
  }
  return -dot;
}

/**
 * -sum_j t_j log(clip(p_j / sum(p))), for row r. Sparse targets hold a class index per row (an
 * index outside [0, cols) is a row of zeros, as tf.oneHot makes it) and clip p first, as TF.js does.
 */
function crossentropy({ p, t, dp, r, o, cols, eps, g }: Row, sparse: boolean): number {
  const hi = Math.fround(1 - eps);
  const cl = (v: number): number => Math.min(Math.max(v, eps), hi);
  const label = sparse ? Math.floor(t[r]!) : -1;
  let s = 0;
  for (let c = 0; c < cols; c++) s += sparse ? cl(p[o + c]!) : p[o + c]!;
  const sum = Math.fround(s);
  let total = 0;
  let dot = 0;
  for (let c = 0; c < cols; c++) {
    const pre = sparse ? cl(p[o + c]!) : p[o + c]!;
    const y = sparse ? (c === label ? 1 : 0) : t[o + c]!;
    const v = Math.fround(pre / sum);
    total -= y * Math.log(cl(v));
    // clipByValue passes the gradient where eps <= v <= 1 - eps, and nothing elsewhere
    const dq = v >= eps && v <= hi ? (-y / cl(v)) * g : 0;
    dp[o + c] = dq;
    dot += dq * pre;
  }
  // d(p_c / sum)/dp: dq_c / sum - sum_k dq_k p_k / sum^2; a sparse target's first clip passes it only inside the range
  for (let c = 0; c < cols; c++) {
    const inside = !sparse || (p[o + c]! >= eps && p[o + c]! <= hi);
    dp[o + c] = inside ? dp[o + c]! / sum - dot / (sum * sum) : 0;
  }
  return total;
}
