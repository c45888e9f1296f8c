import { ACT, BINARY, REDUCE } from "../../addon";
import { aleaState, drawSeed } from "../alea";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

type Kind = "LSTM" | "GRU" | "SimpleRNN";

/** Gates per unit, and the dropout masks tfjs-layers' cell draws for each kind (it uses the first). */
const GATES: Record<Kind, number> = { LSTM: 4, GRU: 3, SimpleRNN: 1 };
const DRAWS: Record<Kind, number> = { LSTM: 4, GRU: 3, SimpleRNN: 1 };
const GATE_ACTS = new Set(["linear", "relu", "sigmoid", "tanh", "hardSigmoid"]);

interface Shape {
  T: number;
  D: number;
  H: number;
}

/** Indices of the arrays a recurrent op keeps from forward to backward. */
const Z = 0, HS = 1, HP = 2, C = 3, RH = 4, XM = 5, DMASK = 6, RMASK = 7;

/**
 * LSTM, GRU and SimpleRNN over whole sequences: the input projection of every step as one GEMM,
 * the recurrence in C (native/src/rnn.c), and dW, dU, db and dx as whole-sequence GEMMs. Masks,
 * initial states, returnSequences, returnState, goBackwards, dropout and recurrentDropout as
 * tfjs-layers has them (one dropout mask per call, drawn as its cell draws it).
 */
export class RecurrentOp implements Op {
  readonly params: ParamSlot[];
  private readonly G: number;
  private readonly dims = new Int32Array(6);

  constructor(
    readonly layer: string,
    private readonly kind: Kind,
    private readonly s: Shape,
    private readonly kernel: ParamSlot,
    private readonly recurrent: ParamSlot,
    private readonly bias: ParamSlot | null,
    private readonly o: { returnSequences: boolean; returnState: boolean; reverse: boolean; act: number; ract: number; dropout: number; recurrentDropout: number; initial: boolean },
  ) {
    this.params = bias ? [kernel, recurrent, bias] : [kernel, recurrent];
    this.G = GATES[kind] * s.H;
  }

  saved(batch: number): number[] {
    const { T, D, H } = this.s;
    const bth = batch * T * H;
    return [
      batch * T * this.G,
      this.o.returnSequences ? 0 : bth,
      bth,
      this.kind === "LSTM" ? bth : 0,
      this.kind === "GRU" ? bth : 0,
      this.o.dropout > 0 ? batch * T * D : 0,
      this.o.dropout > 0 ? batch * D : 0,
      this.o.recurrentDropout > 0 ? batch * H : 0,
    ];
  }

  temps(batch: number): number[] {
    const { T, D, H } = this.s;
    return [batch * T * this.G, batch * T * H, 2 * batch * H, Math.max(batch * T * D, this.G), batch * H, batch * H];
  }

  private dimsFor(batch: number): Int32Array {
    this.dims.set([batch, this.s.T, this.s.H, this.o.reverse ? 1 : 0, this.o.act, this.o.ract]);
    return this.dims;
  }

  /** A dropout multiplier, drawn as tfjs-layers' cell draws it: DRAWS masks in a row, of which it keeps the first. */
  private drawMask(addon: StepContext["addon"], mask: Float32Array, rate: number): void {
    addon.dropoutMask(aleaState(drawSeed(undefined)), mask, Math.fround(1 - rate));
    for (let k = 1; k < DRAWS[this.kind]; k++) drawSeed(undefined);
  }

  forward(ctx: StepContext, io: OpIO): void {
    const { addon } = ctx;
    const { T, D } = this.s;
    const B = io.batch;
    const sv = io.saved;
    const x = io.x[0]!;
    let xin = x;
    if (this.o.dropout > 0) {
      this.drawMask(addon, sv[DMASK]!, this.o.dropout);
      // x[b, t, :] x mask[b, :]
      addon.binary(BINARY.Multiply, x, sv[DMASK]!, sv[XM]!, Int32Array.of(B, T, D), Int32Array.of(T * D, D, 1), Int32Array.of(D, 0, 1));
      xin = sv[XM]!;
    }
    const rmask = this.o.recurrentDropout > 0 ? sv[RMASK]! : null;
    if (rmask) {
      this.drawMask(addon, rmask, this.o.recurrentDropout);
    }
    const z = sv[Z]!;
    addon.sgemm(0, 0, B * T, this.G, D, 1, xin, D, ctx.values(this.kernel.variable), this.G, 0, z, this.G);
    if (this.bias) addon.biasActivation(z, ctx.values(this.bias.variable), B * T, this.G, 20, 0);
    const h = this.o.returnSequences ? io.y[0]! : sv[HS]!;
    const U = ctx.values(this.recurrent.variable);
    const h0 = this.o.initial ? io.x[1]! : null;
    const dims = this.dimsFor(B);
    if (this.kind === "LSTM") addon.lstmForward(z, U, h, sv[C]!, sv[HP]!, io.mask, rmask, h0, this.o.initial ? io.x[2]! : null, dims);
    else if (this.kind === "GRU") addon.gruForward(z, U, h, sv[HP]!, sv[RH]!, io.mask, rmask, h0, dims);
    else addon.rnnForward(z, U, h, sv[HP]!, io.mask, rmask, h0, dims);
    let out = 0;
    if (!this.o.returnSequences) this.lastStep(h, io.y[out++]!, B);
    else out++;
    if (this.o.returnState) {
      this.lastStep(h, io.y[out++]!, B);
      if (this.kind === "LSTM") this.lastStep(sv[C]!, io.y[out++]!, B);
    }
  }

  /** into[b] = seq[b, T-1] (the last step processed). */
  private lastStep(seq: Float32Array, into: Float32Array, B: number): void {
    const { T, H } = this.s;
    for (let b = 0; b < B; b++) into.set(seq.subarray((b * T + T - 1) * H, (b * T + T) * H), b * H);
  }

  backward(ctx: StepContext, io: GradIO): void {
    const { addon } = ctx;
    const { T, D, H } = this.s;
    const B = io.batch;
    const sv = io.saved;
    const [dz, dhSeq, work, tmp, dh0, dc0] = io.temp as Float32Array[];
    // dL/dh at every step: the sequence's gradient, or only the last step's.
    let dh: Float32Array;
    let k = 0;
    if (this.o.returnSequences) dh = io.dy[k++]!;
    else {
      dh = dhSeq!;
      dh.fill(0);
      const last = io.dy[k++]!;
      for (let b = 0; b < B; b++) dh.set(last.subarray(b * H, (b + 1) * H), (b * T + T - 1) * H);
    }
    let dcT: Float32Array | null = null;
    if (this.o.returnState) {
      const dhT = io.dy[k++]!;
      for (let b = 0; b < B; b++) for (let j = 0; j < H; j++) dh[(b * T + T - 1) * H + j] += dhT[b * H + j]!;
      if (this.kind === "LSTM") dcT = io.dy[k++]!;
    }
    const U = ctx.values(this.recurrent.variable);
    const rmask = this.o.recurrentDropout > 0 ? sv[RMASK]! : null;
    const h = this.o.returnSequences ? io.y[0]! : sv[HS]!;
    const wantH0 = this.o.initial && io.dx[1] !== null && io.dx[1] !== undefined;
    const wantC0 = this.kind === "LSTM" && this.o.initial && io.dx[2] !== null && io.dx[2] !== undefined;
    const dims = this.dimsFor(B);
    if (this.kind === "LSTM") addon.lstmBackward(sv[Z]!, sv[C]!, h, dh, dcT, dz!, U, io.mask, rmask, this.o.initial ? io.x[2]! : null, wantH0 ? dh0! : null, wantC0 ? dc0! : null, work!, dims);
    else if (this.kind === "GRU") addon.gruBackward(sv[Z]!, h, sv[HP]!, dh, dz!, U, io.mask, rmask, wantH0 ? dh0! : null, work!, dims);
    else addon.rnnBackward(sv[Z]!, h, dh, dz!, U, io.mask, rmask, wantH0 ? dh0! : null, work!, dims);
    const rows = B * T;
    const xin = this.o.dropout > 0 ? sv[XM]! : io.x[0]!;
    const gk = ctx.grad(this.kernel);
    if (gk) addon.sgemm(1, 0, D, this.G, rows, 1, xin, D, dz!, this.G, gk.add ? 1 : 0, gk.view, this.G);
    const gu = ctx.grad(this.recurrent);
    if (gu) {
      const beta = gu.add ? 1 : 0;
      if (this.kind === "GRU") {
        addon.sgemm(1, 0, H, 2 * H, rows, 1, sv[HP]!, H, dz!, this.G, beta, gu.view, this.G);
        addon.sgemm(1, 0, H, H, rows, 1, sv[RH]!, H, dz!.subarray(2 * H), this.G, beta, gu.view.subarray(2 * H), this.G);
      } else addon.sgemm(1, 0, H, this.G, rows, 1, sv[HP]!, H, dz!, this.G, beta, gu.view, this.G);
    }
    const gb = this.bias ? ctx.grad(this.bias) : null;
    if (gb) emit(addon, gb.view, gb.add, tmp!, (into) => addon.reduce(REDUCE.Sum, dz!, into, 1, rows, this.G));
    io.paramsDone();
    const dx = io.dx[0];
    if (dx) {
      const W = ctx.values(this.kernel.variable);
      if (this.o.dropout > 0) {
        const t = tmp!.subarray(0, rows * D);
        addon.sgemm(0, 1, rows, D, this.G, 1, dz!, this.G, W, this.G, 0, t, D);
        emit(addon, dx, io.addDx[0]!, dz!, (into) => addon.binary(BINARY.Multiply, t, sv[DMASK]!, into, Int32Array.of(B, T, D), Int32Array.of(T * D, D, 1), Int32Array.of(D, 0, 1)));
      } else addon.sgemm(0, 1, rows, D, this.G, 1, dz!, this.G, W, this.G, io.addDx[0] ? 1 : 0, dx, D);
    }
    if (wantH0) this.give(addon, io, 1, dh0!);
    if (wantC0) this.give(addon, io, 2, dc0!);
  }

  private give(addon: StepContext["addon"], io: GradIO, i: number, g: Float32Array): void {
    const dx = io.dx[i]!;
    if (io.addDx[i]) addon.accumulate(dx, g.subarray(0, dx.length), 0);
    else dx.set(g.subarray(0, dx.length));
  }
}

const ACT_CODE = ACT as Readonly<Record<string, number>>;

export const recurrent: OpBuilder = (c: LayerCall) => {
  const kind = c.cls as Kind;
  const cfg = c.cfg;
  if (cfg.stateful) return `${c.name} is stateful`;
  const inShape = c.inShapes[0]!;
  if (inShape.length !== 2) return `${c.name} takes input of shape [${inShape.join(", ")}]`;
  const act = String(cfg.activation ?? "tanh");
  const ract = String(cfg.recurrentActivation ?? "hardSigmoid");
  if (!GATE_ACTS.has(act)) return `${c.name} uses the ${act} activation`;
  if (kind !== "SimpleRNN" && !GATE_ACTS.has(ract)) return `${c.name} uses the ${ract} recurrent activation`;
  const kernel = c.param("kernel");
  const rec = c.param("recurrent_kernel");
  if (!kernel || !rec) return `${c.name} has no kernel`;
  const H = Number(cfg.units);
  const initial = c.inShapes.length > 1;
  if (initial && c.inShapes.length !== (kind === "LSTM" ? 3 : 2)) return `${c.name} is given ${c.inShapes.length - 1} initial states`;
  const rate = (v: unknown): number => Math.min(1, Math.max(0, Number(v ?? 0)));
  const dropout = rate(cfg.dropout);
  const recurrentDropout = rate(cfg.recurrentDropout);
  if (dropout >= 1 || recurrentDropout >= 1) return `${c.name} drops everything`;
  return new RecurrentOp(c.name, kind, { T: inShape[0]!, D: inShape[1]!, H }, kernel, rec, c.param("bias"), {
    returnSequences: cfg.returnSequences === true,
    returnState: cfg.returnState === true,
    reverse: cfg.goBackwards === true,
    act: ACT_CODE[act]!,
    ract: ACT_CODE[ract]!,
    dropout,
    recurrentDropout,
    initial,
  });
};
