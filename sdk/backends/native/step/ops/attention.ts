import { BINARY, REDUCE, type NativeAddon } from "../../addon";
import { MASKED } from "../../../../model/layers/multi-head-attention";
import { aleaState, drawSeed } from "../alea";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

interface Dims {
  B: number;
  Tq: number;
  Tk: number;
  H: number;
  dk: number;
  dv: number;
  out: number;
  /** The last dimension of the query, value and key inputs. */
  dq: number;
  dvIn: number;
  dkIn: number;
}

/** Saved arrays: the projections, the probabilities (before and after dropout), the dropout mask, the context, where queries attend. */
const Q = 0, K = 1, V = 2, P = 3, PD = 4, DROP = 5, CTX = 6, ALLOWED = 7;
/** Temporaries: dctx, dP, dQ, dK, dV, and one for sums and added gradients. */
const DCTX = 0, DP = 1, DQ = 2, DK = 3, DV = 4, TMP = 5;

/**
 * meshtrain's MultiHeadAttention as batched GEMMs over [B, T, heads, dim] views, no transposes:
 * projections, scores Q K^T per sample and head (the query scaled by 1/sqrt(keyDim)), the masks
 * added as -1e9, a softmax over the keys, dropout on the probabilities as tf.dropout draws it,
 * the context P V written straight into [B, Tq, heads x valueDim], and the output projection.
 * Backward the same products in reverse.
 */
export class AttentionOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  private readonly scale: number;

  constructor(
    readonly layer: string,
    private readonly d: Omit<Dims, "B">,
    private readonly w: { q: ParamSlot; k: ParamSlot; v: ParamSlot; o: ParamSlot; bq: ParamSlot | null; bk: ParamSlot | null; bv: ParamSlot | null; bo: ParamSlot | null },
    /** Which input each of query, value, key and the attention mask is (null: none). */
    private readonly at: { q: number; v: number; k: number; mask: number | null },
    private readonly o: { causal: boolean; dropout: number; self: boolean },
  ) {
    this.params = [w.q, w.bq, w.k, w.bk, w.v, w.bv, w.o, w.bo].filter((p): p is ParamSlot => p !== null);
    this.scale = Math.fround(1 / Math.sqrt(d.dk));
  }

  private masked(io: OpIO): boolean {
    return this.at.mask !== null || this.o.causal || io.mask !== null;
  }

  saved(batch: number): number[] {
    const { Tq, Tk, H, dk, dv } = this.d;
    const probs = batch * H * Tq * Tk;
    const drop = this.o.dropout > 0 ? probs : 0;
    return [batch * Tq * H * dk, batch * Tk * H * dk, batch * Tk * H * dv, probs, drop, drop, batch * Tq * H * dv, batch * Tq * Tk];
  }

  temps(batch: number): number[] {
    const { Tq, Tk, H, dk, dv, out, dq, dvIn, dkIn } = this.d;
    return [batch * Tq * H * dv, batch * H * Tq * Tk, batch * Tq * H * dk, batch * Tk * H * dk, batch * Tk * H * dv, Math.max(batch * Math.max(Tq * dq, Tk * dvIn, Tk * dkIn), out, H * Math.max(dk, dv))];
  }

  /** C[b, h] = op(A[b, h]) op(B[b, h]) over every sample and head, operands as [rows, ld] views with per-sample and per-head offsets. */
  private bh(addon: NativeAddon, B: number, ta: number, tb: number, M: number, N: number, Kd: number, A: Float32Array, lda: number, aS: number, aH: number, Bm: Float32Array, ldb: number, bS: number, bH: number, C: Float32Array, ldc: number, cS: number, cH: number, beta = 0): void {
    addon.gemmBatched(A, Bm, C, Int32Array.of(ta, tb, M, N, Kd, lda, ldb, ldc, B, this.d.H), Float64Array.of(aS, aH, bS, bH, cS, cH), 1, beta);
  }

  /** y = x W + b over rows of x. */
  private project(ctx: StepContext, x: Float32Array, rows: number, inDim: number, w: ParamSlot, b: ParamSlot | null, outDim: number, y: Float32Array): void {
    ctx.addon.sgemm(0, 0, rows, outDim, inDim, 1, x, inDim, ctx.values(w.variable), outDim, 0, y, outDim);
    if (b) ctx.addon.biasActivation(y, ctx.values(b.variable), rows, outDim, 20, 0);
  }

  forward(ctx: StepContext, io: OpIO): void {
    const { addon } = ctx;
    const { Tq, Tk, H, dk, dv, out, dq, dvIn, dkIn } = this.d;
    const B = io.batch;
    const s = io.saved;
    const w = this.w;
    this.project(ctx, io.x[this.at.q]!, B * Tq, dq, w.q, w.bq, H * dk, s[Q]!);
    addon.scale(s[Q]!, this.scale);
    this.project(ctx, io.x[this.at.k]!, B * Tk, dkIn, w.k, w.bk, H * dk, s[K]!);
    this.project(ctx, io.x[this.at.v]!, B * Tk, dvIn, w.v, w.bv, H * dv, s[V]!);
    const probs = s[P]!;
    this.bh(addon, B, 0, 1, Tq, Tk, dk, s[Q]!, H * dk, Tq * H * dk, dk, s[K]!, H * dk, Tk * H * dk, dk, probs, Tk, H * Tq * Tk, Tq * Tk);
    if (this.masked(io)) this.applyMask(io, probs);
    addon.softmaxAxis(probs, probs, B * H * Tq, Tk, 1);
    let used = probs;
    if (this.o.dropout > 0) {
      addon.dropoutMask(aleaState(drawSeed(undefined)), s[DROP]!, Math.fround(1 - this.o.dropout));
      const pd = s[PD]!;
      multiply(addon, probs, s[DROP]!, pd);
      used = pd;
    }
    this.bh(addon, B, 0, 0, Tq, dv, Tk, used, Tk, H * Tq * Tk, Tq * Tk, s[V]!, H * dv, Tk * H * dv, dv, s[CTX]!, H * dv, Tq * H * dv, dv);
    addon.sgemm(0, 0, B * Tq, out, H * dv, 1, s[CTX]!, H * dv, ctx.values(w.o.variable), out, 0, io.y[0]!, out);
    if (w.bo) addon.biasActivation(io.y[0]!, ctx.values(w.bo.variable), B * Tq, out, 20, 0);
  }

  /** Where each query attends (as MultiHeadAttention's attendMask combines its masks), added to the scores as -1e9 where it does not. */
  private applyMask(io: OpIO, scores: Float32Array): void {
    const { Tq, Tk, H } = this.d;
    const allowed = io.saved[ALLOWED]!;
    const att = this.at.mask === null ? null : io.x[this.at.mask]!;
    const qm = io.mask;
    for (let b = 0; b < io.batch; b++) {
      for (let i = 0; i < Tq; i++) {
        for (let j = 0; j < Tk; j++) {
          let a = att ? (att[(b * Tq + i) * Tk + j]! > 0 ? 1 : 0) : 1;
          if (qm) a *= (qm[b * Tq + i]! > 0 ? 1 : 0) * (this.o.self ? (qm[b * Tk + j]! > 0 ? 1 : 0) : 1);
          if (this.o.causal && j > i) a = 0;
          allowed[(b * Tq + i) * Tk + j] = a;
        }
      }
    }
    const add = Math.fround(MASKED);
    for (let b = 0; b < io.batch; b++) {
      for (let h = 0; h < H; h++) {
        const base = (b * H + h) * Tq * Tk;
        for (let e = 0; e < Tq * Tk; e++) if (allowed[b * Tq * Tk + e] === 0) scores[base + e] = scores[base + e]! + add;
      }
    }
  }

  backward(ctx: StepContext, io: GradIO): void {
    const { addon } = ctx;
    const { Tq, Tk, H, dk, dv, out } = this.d;
    const B = io.batch;
    const s = io.saved;
    const t = io.temp;
    const w = this.w;
    const dy = io.dy[0]!;
    const used = this.o.dropout > 0 ? s[PD]! : s[P]!;
    this.weightGrad(ctx, s[CTX]!, B * Tq, H * dv, dy, out, w.o, w.bo, t[TMP]!);
    addon.sgemm(0, 1, B * Tq, H * dv, out, 1, dy, out, ctx.values(w.o.variable), out, 0, t[DCTX]!, H * dv);
    const dP = t[DP]!;
    this.bh(addon, B, 0, 1, Tq, Tk, dv, t[DCTX]!, H * dv, Tq * H * dv, dv, s[V]!, H * dv, Tk * H * dv, dv, dP, Tk, H * Tq * Tk, Tq * Tk);
    this.bh(addon, B, 1, 0, Tk, dv, Tq, used, Tk, H * Tq * Tk, Tq * Tk, t[DCTX]!, H * dv, Tq * H * dv, dv, t[DV]!, H * dv, Tk * H * dv, dv);
    if (this.o.dropout > 0) multiply(addon, dP, s[DROP]!, dP);
    addon.softmaxAxisBackward(s[P]!, dP, dP, B * H * Tq, Tk, 1, 0);
    this.bh(addon, B, 0, 0, Tq, dk, Tk, dP, Tk, H * Tq * Tk, Tq * Tk, s[K]!, H * dk, Tk * H * dk, dk, t[DQ]!, H * dk, Tq * H * dk, dk);
    this.bh(addon, B, 1, 0, Tk, dk, Tq, dP, Tk, H * Tq * Tk, Tq * Tk, s[Q]!, H * dk, Tq * H * dk, dk, t[DK]!, H * dk, Tk * H * dk, dk);
    addon.scale(t[DQ]!, this.scale);
    const { dq, dkIn, dvIn } = this.d;
    this.weightGrad(ctx, io.x[this.at.q]!, B * Tq, dq, t[DQ]!, H * dk, w.q, w.bq, t[TMP]!);
    this.weightGrad(ctx, io.x[this.at.k]!, B * Tk, dkIn, t[DK]!, H * dk, w.k, w.bk, t[TMP]!);
    this.weightGrad(ctx, io.x[this.at.v]!, B * Tk, dvIn, t[DV]!, H * dv, w.v, w.bv, t[TMP]!);
    io.paramsDone();
    // Query, key and value may be one input (self-attention): its gradient sums their three parts.
    const began = new Set<number>();
    const input = (i: number, dz: Float32Array, rows: number, inDim: number, wk: ParamSlot, outDim: number): void => {
      const dx = io.dx[i];
      if (!dx) return;
      const add = began.has(i) || io.addDx[i]!;
      began.add(i);
      addon.sgemm(0, 1, rows, inDim, outDim, 1, dz, outDim, ctx.values(wk.variable), outDim, add ? 1 : 0, dx, inDim);
    };
    input(this.at.q, t[DQ]!, B * Tq, dq, w.q, H * dk);
    input(this.at.k, t[DK]!, B * Tk, dkIn, w.k, H * dk);
    input(this.at.v, t[DV]!, B * Tk, dvIn, w.v, H * dv);
    const m = this.at.mask;
    if (m !== null && io.dx[m] && !io.addDx[m] && !began.has(m)) io.dx[m]!.fill(0);
  }

  /** dW (+)= x^T dz, db (+)= column sums of dz. */
  private weightGrad(ctx: StepContext, x: Float32Array, rows: number, inDim: number, dz: Float32Array, outDim: number, w: ParamSlot, b: ParamSlot | null, tmp: Float32Array): void {
    const gw = ctx.grad(w);
    if (gw) ctx.addon.sgemm(1, 0, inDim, outDim, rows, 1, x, inDim, dz, outDim, gw.add ? 1 : 0, gw.view, outDim);
    const gb = b ? ctx.grad(b) : null;
    if (gb) emit(ctx.addon, gb.view, gb.add, tmp, (into) => ctx.addon.reduce(REDUCE.Sum, dz, into, 1, rows, outDim));
  }
}

/** out = a x b, elementwise. */
function multiply(addon: NativeAddon, a: Float32Array, b: Float32Array, out: Float32Array): void {
  addon.binary(BINARY.Multiply, a, b, out, Int32Array.of(out.length), Int32Array.of(1), Int32Array.of(1));
}

export const attention: OpBuilder = (c: LayerCall) => {
  const cfg = c.cfg;
  const hasMask = cfg.hasAttentionMask === true;
  const n = c.inShapes.length - (hasMask ? 1 : 0);
  const at = { q: 0, v: n > 1 ? 1 : 0, k: n > 2 ? 2 : n > 1 ? 1 : 0, mask: hasMask ? c.inShapes.length - 1 : null };
  const [Tq, dq] = c.inShapes[at.q]! as [number, number];
  const [Tk, dvIn] = c.inShapes[at.v]! as [number, number];
  const dkIn = c.inShapes[at.k]![1]!;
  if (c.inShapes[at.q]!.length !== 2 || c.inShapes[at.v]!.length !== 2) return `${c.name} attends over a single sequence axis; its inputs are [${c.inShapes.map((s) => s.join(", ")).join("], [")}]`;
  const slot = (name: string): ParamSlot | null => c.param(name);
  const [q, k, v, o] = ["query_kernel", "key_kernel", "value_kernel", "output_kernel"].map(slot);
  if (!q || !k || !v || !o) return `${c.name} is not built`;
  const H = Number(cfg.numHeads);
  const dk = Number(cfg.keyDim);
  const dv = Number(cfg.valueDim ?? dk);
  const out = c.outShapes[0]![1]!;
  const w = { q, k, v, o, bq: slot("query_bias"), bk: slot("key_bias"), bv: slot("value_bias"), bo: slot("output_bias") };
  return new AttentionOp(c.name, { Tq, Tk, H, dk, dv, out, dq, dvIn, dkIn }, w, at, { causal: cfg.useCausalMask === true, dropout: Number(cfg.dropout ?? 0), self: n === 1 });
};
