import * as tf from "@tensorflow/tfjs";
import { rng, mixSeed } from "../../data/random";
import type { AllReduceStats } from "../../collectives/ring-allreduce";
import { loadAddon } from "../../backends/native/addon";
import { addInPlace } from "../../compute/slice-gradient";

/** The data ring's all-reduce of float32 values, as a replica's step has it. */
type Sum = (data: Float32Array) => Promise<{ data: Float32Array; stats: AllReduceStats }>;

/** One variable's gradient as PowerSGD sees it: an n x m matrix (m its last dimension) at `offset` in the flat gradient. */
interface Matrix {
  offset: number;
  n: number;
  m: number;
  /** The rank it is approximated at: min(rank asked, n, m). */
  r: number;
  /** The shared right factor, warm-started from the last step (the same on every replica). */
  q: Float32Array;
  /** What the approximations left out of this replica's gradient so far (error feedback). */
  error: Float32Array;
  /** Where the next step's error is written until commit() makes it the error: no 36 MB allocated (and page-faulted) a step. */
  next: Float32Array | null;
}

/**
 * Low-rank gradients (Vogels et al. 2019, PowerSGD; as DDP's powerSGD_hook): each gradient of
 * two or more dimensions, plus the error this replica carried, is approximated as P Q^T of rank
 * r with one power iteration warm-started from the last step's Q: P = M Q is all-reduced with the
 * gradients left whole (vectors), the state and the flag; P is orthonormalized; Q = M^T P is
 * all-reduced; the step applies P Q^T. Each replica keeps M - P (M^T P)^T, its part of what the
 * approximation left out, for its next step: over the replicas these sum to the whole gradient's
 * residual. Two all-reduces of r (n + m) values per matrix instead of one of n m.
 */
export class PowerSgd {
  private readonly matrices: Matrix[] = [];
  /** Where the gradients sent whole lie in the flat gradient: [offset, length] pairs. */
  private readonly whole: Array<[number, number]> = [];
  private pending: Array<{ q: Float32Array; error: Float32Array }> | null = null;
  /** Room for the largest matrix's P Q^T, kept between steps. */
  private scratch: Float32Array | null = null;

  constructor(shapes: ReadonlyArray<readonly number[]>, rank: number) {
    let offset = 0;
    shapes.forEach((shape, v) => {
      const size = shape.reduce((a, d) => a * d, 1);
      if (shape.length >= 2 && size > 0) {
        const m = shape[shape.length - 1]!;
        const n = size / m;
        const r = Math.min(rank, n, m);
        const next = rng(mixSeed(0x9059, v));
        const q = Float32Array.from({ length: m * r }, () => next() * 2 - 1);
        this.matrices.push({ offset, n, m, r, q, error: new Float32Array(size), next: null });
      } else this.whole.push([offset, size]);
      offset += size;
    });
  }

  /**
   * All-reduces `flat` ([gradient (n values) | rest]) the PowerSGD way and returns the sum laid
   * out as `flat` is, the gradient approximated. The new error and Q wait for commit(): a step
   * the replicas drop keeps the old ones.
   */
  async allReduce(flat: Float32Array, n: number, sum: Sum): Promise<{ data: Float32Array; stats: AllReduceStats }> {
    const rest = flat.length - n;
    // M = gradient + error, in flat itself: flat ends holding the sum, as an all-reduce's buffer does.
    const ms = this.matrices.map((x) => {
      const M = flat.subarray(x.offset, x.offset + x.n * x.m);
      addInPlace(M, x.error);
      return M;
    });
    const ps = this.matrices.map((x, k) => matMul(ms[k]!, x.q, x.n, x.m, x.r, false));
    // First: the whole gradients, the state and flag, and every P.
    const { first, wholeLength } = this.firstRound(flat, n, ps);
    const a = await sum(first);
    let at = wholeLength + rest;
    const pHat = this.matrices.map((x) => {
      const p = a.data.slice(at, (at += x.n * x.r));
      orthonormalize(p, x.n, x.r);
      return p;
    });
    // Second: every Q = M^T P.
    const qs = this.matrices.map((x, k) => matMul(ms[k]!, pHat[k]!, x.n, x.m, x.r, true));
    const second = new Float32Array(qs.reduce((s, q) => s + q.length, 0));
    at = 0;
    for (const q of qs) (second.set(q, at), (at += q.length));
    const b = await sum(second);
    at = 0;
    for (const [off, len] of this.whole) (flat.set(a.data.subarray(at, at + len), off), (at += len));
    flat.set(a.data.subarray(at, at + rest), n);
    at = 0;
    const scratch = (this.scratch ??= new Float32Array(Math.max(0, ...this.matrices.map((x) => x.n * x.m))));
    this.pending = this.matrices.map((x, k) => {
      const q = b.data.slice(at, (at += x.m * x.r));
      // This replica's share of what is left out: M - P (M^T P)^T, with its own Q before the sum.
      const error = (x.next ??= new Float32Array(x.n * x.m));
      error.set(ms[k]!);
      addInPlace(
        error,
        outer(
          pHat[k]!.map((v) => -v),
          qs[k]!,
          x.n,
          x.m,
          x.r,
          scratch.subarray(0, x.n * x.m),
        ),
      );
      // Then M's place in flat takes the approximation of the sum.
      outer(pHat[k]!, q, x.n, x.m, x.r, ms[k]!);
      return { q, error };
    });
    const stats = {
      waitMs: a.stats.waitMs + b.stats.waitMs,
      commMs: a.stats.commMs + b.stats.commMs,
      bytesSent: a.stats.bytesSent + b.stats.bytesSent,
    };
    return { data: flat, stats };
  }

  /** The first all-reduce's buffer: the whole gradients, then the rest of flat (state and flag), then every P. */
  private firstRound(
    flat: Float32Array,
    n: number,
    ps: readonly Float32Array[],
  ): { first: Float32Array; wholeLength: number } {
    const rest = flat.length - n;
    const wholeLength = this.whole.reduce((a, [, len]) => a + len, 0);
    const first = new Float32Array(wholeLength + rest + ps.reduce((a, p) => a + p.length, 0));
    let at = 0;
    for (const [off, len] of this.whole) (first.set(flat.subarray(off, off + len), at), (at += len));
    first.set(flat.subarray(n), at);
    at += rest;
    for (const p of ps) (first.set(p, at), (at += p.length));
    return { first, wholeLength };
  }

  /** The step was applied: its error and Q carry to the next. */
  commit(): void {
    this.pending?.forEach((p, k) => {
      const x = this.matrices[k]!;
      x.q = p.q;
      x.next = x.error;
      x.error = p.error;
    });
    this.pending = null;
  }

  /** The step was dropped: the last applied step's error and Q stay. */
  drop(): void {
    this.pending = null;
  }
}

/** M Q (M n x m, Q m x r) or, transposed, M^T P (P n x r). */
function matMul(M: Float32Array, B: Float32Array, n: number, m: number, r: number, transposeM: boolean): Float32Array {
  return transposeM ? gemm(M, B, m, r, n, true) : gemm(M, B, n, r, m, false);
}

/** P Q^T (P n x r, Q m x r): the approximation, n x m (Q transposed first: the kernel reads rows of B fastest). */
function outer(P: Float32Array, Q: Float32Array, n: number, m: number, r: number, into?: Float32Array): Float32Array {
  const qt = new Float32Array(r * m);
  for (let j = 0; j < m; j++) for (let k = 0; k < r; k++) qt[k * m + j] = Q[j * r + k]!;
  return gemm(P, qt, n, m, r, false, into);
}

/**
 * A (rows x inner, or inner x rows transposed) times B (inner x cols): the native addon's kernel
 * where it was built, on whatever backend the worker runs. TF.js's path took 3.8 s for one
 * 3000 x 3000 product of inner size 4 on the native backend and 40 s a step of the 11.4M MLP;
 * the addon's takes 9 ms.
 */
function gemm(
  A: Float32Array,
  B: Float32Array,
  rows: number,
  cols: number,
  inner: number,
  transposeA: boolean,
  into?: Float32Array,
): Float32Array {
  const out = into ?? new Float32Array(rows * cols);
  const load = loadAddon();
  if (load.ok) {
    load.addon.batchMatMul(A, B, out, 1, 0, 0, rows, cols, inner, transposeA ? 1 : 0, 0);
    return out;
  }
  return tf.tidy(() => {
    out.set(
      tf
        .matMul(
          tf.tensor2d(A, transposeA ? [inner, rows] : [rows, inner]),
          tf.tensor2d(B, [inner, cols]),
          transposeA,
          false,
        )
        .dataSync() as Float32Array,
    );
    return out;
  });
}

/**
 * Gram-Schmidt on P's r columns (n x r, row-major), in place, twice over ("twice is enough" in
 * float32). A column with less than a ten-thousandth of its length left is in the span of the
 * ones before (a gradient of lower rank than r, as a softmax layer's always is): it becomes
 * zero rather than a unit vector of rounding noise, which would not be orthogonal to the others.
 */
export function orthonormalize(P: Float32Array, n: number, r: number): void {
  const col = (j: number) => Float64Array.from({ length: n }, (_, i) => P[i * r + j]!);
  const length = (v: Float64Array) => Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  const done: Float64Array[] = [];
  for (let j = 0; j < r; j++) {
    const v = col(j);
    const before = length(v);
    for (let pass = 0; pass < 2; pass++) {
      for (const u of done) {
        let dot = 0;
        for (let i = 0; i < n; i++) dot += v[i]! * u[i]!;
        for (let i = 0; i < n; i++) v[i]! -= dot * u[i]!;
      }
    }
    const norm = length(v);
    const keep = before > 0 && norm > 1e-4 * before;
    for (let i = 0; i < n; i++) v[i] = keep ? v[i]! / norm : 0;
    if (keep) done.push(v);
    for (let i = 0; i < n; i++) P[i * r + j] = v[i]!;
  }
}
