import type { LayerCall, OpBuilder } from "../layer-call";
import type { GradIO, Op, OpIO, StepContext } from "../op";

/**
 * Dot of two [B, m, k]-shaped inputs along one axis each (tfjs-layers' batchDot for rank 3,
 * the attention product), or of two [B, d] inputs along d (one value a sample): per sample
 * y = op(a) op(b), a batched GEMM forward and two backward.
 */
export class DotOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  constructor(
    readonly layer: string,
    /** Per sample: a is [ar, ac] and b [br, bc] as they lie in memory. */
    private readonly a: [number, number],
    private readonly b: [number, number],
    /** Whether a's rows (not its columns) are contracted, and b's columns (not its rows). */
    private readonly transA: boolean,
    private readonly transB: boolean,
  ) {}
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  private get M(): number {
    return this.transA ? this.a[1] : this.a[0];
  }
  private get K(): number {
    return this.transA ? this.a[0] : this.a[1];
  }
  private get N(): number {
    return this.transB ? this.b[0] : this.b[1];
  }
  private batched(ctx: StepContext, batch: number, ta: boolean, tb: boolean, M: number, N: number, K: number, A: Float32Array, lda: number, sa: number, B: Float32Array, ldb: number, sb: number, C: Float32Array, ldc: number, sc: number, beta: number): void {
    const dims = Int32Array.of(ta ? 1 : 0, tb ? 1 : 0, M, N, K, lda, ldb, ldc, batch, 1);
    ctx.addon.gemmBatched(A, B, C, dims, Float64Array.of(sa, 0, sb, 0, sc, 0), 1, beta);
  }
  forward(ctx: StepContext, io: OpIO): void {
    const [ar, ac] = this.a;
    const [br, bc] = this.b;
    this.batched(ctx, io.batch, this.transA, this.transB, this.M, this.N, this.K, io.x[0]!, ac, ar * ac, io.x[1]!, bc, br * bc, io.y[0]!, this.N, this.M * this.N, 0);
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const [ar, ac] = this.a;
    const [br, bc] = this.b;
    const { M, N } = this;
    const dy = io.dy[0]!;
    // y = A B with A = op(a), B = op(b): dA = dy B^T, dB = A^T dy; a transposed operand's gradient is the transpose.
    const da = io.dx[0];
    if (da) {
      const beta = io.addDx[0] ? 1 : 0;
      if (!this.transA) this.batched(ctx, io.batch, false, !this.transB, ar, ac, N, dy, N, M * N, io.x[1]!, bc, br * bc, da, ac, ar * ac, beta);
      else this.batched(ctx, io.batch, this.transB, true, ar, ac, N, io.x[1]!, bc, br * bc, dy, N, M * N, da, ac, ar * ac, beta);
    }
    const db = io.dx[1];
    if (db) {
      const beta = io.addDx[1] ? 1 : 0;
      if (!this.transB) this.batched(ctx, io.batch, !this.transA, false, br, bc, M, io.x[0]!, ac, ar * ac, dy, N, M * N, db, bc, br * bc, beta);
      else this.batched(ctx, io.batch, true, this.transA, br, bc, M, dy, N, M * N, io.x[0]!, ac, ar * ac, db, bc, br * bc, beta);
    }
  }
}

export const dot: OpBuilder = (c: LayerCall) => {
  if (c.cfg.normalize) return `${c.name} normalizes its inputs`;
  const [sa, sb] = c.inShapes as [number[], number[]];
  if (c.inShapes.length !== 2 || sa.length !== sb.length || sa.length < 1 || sa.length > 2) return `${c.name} takes inputs of shapes [${sa.join(", ")}] and [${(sb ?? []).join(", ")}]`;
  const rank = sa.length + 1;
  const given = c.cfg.axes;
  const axes = (Array.isArray(given) ? given : [given, given]).map((a) => (Number(a) < 0 ? Number(a) + rank : Number(a)));
  if (rank === 2) return new DotOp(c.name, [1, sa[0]!], [sb[0]!, 1], false, false);
  const [ia, ib] = axes as [number, number];
  if (sa[ia - 1] !== sb[ib - 1]) return `${c.name} contracts axes of sizes ${sa[ia - 1]} and ${sb[ib - 1]}`;
  return new DotOp(c.name, [sa[0]!, sa[1]!], [sb[0]!, sb[1]!], ia === 1, ib === 2);
};
