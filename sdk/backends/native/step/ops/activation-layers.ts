import { REDUCE } from "../../addon";
import { activate, activateBackward, needsInput, stepActivation, type StepActivation } from "../activation";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

/** An activation on its own: the Activation layer and ReLU, LeakyReLU, ELU, ThresholdedReLU, Softmax (over its axis). */
export class ActivationOp implements Op {
  readonly params = [];
  readonly inPlace: boolean;
  constructor(
    readonly layer: string,
    private readonly act: StepActivation,
    private readonly size: number,
    private readonly cols: number,
    private readonly alpha?: number,
    private readonly softmax?: { n: number; inner: number },
  ) {
    this.inPlace = !needsInput(act);
  }
  saved(): number[] {
    return [];
  }
  temps(batch: number): number[] {
    return [batch * this.size];
  }
  forward(ctx: StepContext, io: OpIO): void {
    if (this.softmax)
      return ctx.addon.softmaxAxis(
        io.x[0]!,
        io.y[0]!,
        io.y[0]!.length / (this.softmax.n * this.softmax.inner),
        this.softmax.n,
        this.softmax.inner,
      );
    activate(ctx.addon, this.act, io.x[0]!, io.y[0]!, this.cols, this.alpha);
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const add = io.addDx[0]!;
    const y = io.y[0]!;
    if (this.softmax) {
      const { n, inner } = this.softmax;
      return ctx.addon.softmaxAxisBackward(y, io.dy[0]!, dx, y.length / (n * inner), n, inner, add ? 1 : 0);
    }
    activateBackward(
      ctx.addon,
      this.act,
      io.dy[0]!,
      needsInput(this.act) ? io.x[0]! : null,
      y,
      dx,
      this.cols,
      add,
      this.alpha,
    );
  }
}

export const activationLayer: OpBuilder = (c: LayerCall) => {
  const shape = c.inShapes[0]!;
  const size = sizeOf(shape);
  const cols = shape[shape.length - 1] ?? 1;
  switch (c.cls) {
    case "Activation": {
      const act = stepActivation(c.cfg.activation);
      return act
        ? new ActivationOp(c.name, act, size, cols)
        : `${c.name} uses the ${String(c.cfg.activation)} activation`;
    }
    case "ReLU":
      if (c.cfg.maxValue !== undefined && c.cfg.maxValue !== null) return `${c.name} clips at maxValue`;
      return new ActivationOp(c.name, "relu", size, cols);
    case "LeakyReLU":
      return new ActivationOp(c.name, "leakyRelu", size, cols, Number(c.cfg.alpha ?? 0.3));
    case "ELU":
      // tfjs-layers' elu takes no alpha but 1.
      return Number(c.cfg.alpha ?? 1) === 1
        ? new ActivationOp(c.name, "elu", size, cols)
        : `${c.name} has alpha ${String(c.cfg.alpha)}`;
    case "ThresholdedReLU":
      return new ActivationOp(c.name, "thresholdedRelu", size, cols, Number(c.cfg.theta ?? 1));
    case "Softmax": {
      if (c.masked) return `${c.name} takes a mask`;
      const rank = shape.length + 1;
      const given = c.cfg.axis ?? 1;
      if (Array.isArray(given) && given.length !== 1) return `${c.name} normalizes over several axes`;
      const a = Number(Array.isArray(given) ? given[0] : given);
      const axis = a < 0 ? a + rank : a;
      if (axis < 1 || axis >= rank) return `${c.name} normalizes over axis ${a}`;
      return new ActivationOp(c.name, "softmax", size, cols, 0, {
        n: shape[axis - 1]!,
        inner: sizeOf(shape.slice(axis)),
      });
    }
    default:
      return `${c.name} is not an activation`;
  }
};

/** PReLU: y = x where x > 0, else alpha x, alpha a weight shared over the axes it names. */
export class PReluOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  constructor(
    readonly layer: string,
    private readonly alpha: ParamSlot,
    private readonly size: number,
    private readonly alphaStrides: number[],
    private readonly shape: number[],
  ) {
    this.params = [alpha];
  }
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [this.alpha.variable.size];
  }
  /** The index into alpha of element i of a sample. */
  private at(i: number): number {
    let rest = i;
    let j = 0;
    for (let d = this.shape.length - 1; d >= 0; d--) {
      const n = this.shape[d]!;
      j += (rest % n) * this.alphaStrides[d]!;
      rest = Math.floor(rest / n);
    }
    return j;
  }
  forward(ctx: StepContext, io: OpIO): void {
    const a = ctx.values(this.alpha.variable);
    const x = io.x[0]!;
    const y = io.y[0]!;
    for (let i = 0; i < y.length; i++) y[i] = x[i]! > 0 ? x[i]! : a[this.at(i % this.size)]! * x[i]!;
  }
  backward(ctx: StepContext, io: GradIO): void {
    const a = ctx.values(this.alpha.variable);
    const x = io.x[0]!;
    const dy = io.dy[0]!;
    const g = ctx.grad(this.alpha);
    if (g) {
      emit(ctx.addon, g.view, g.add, io.temp[0]!, (into) => {
        into.fill(0);
        for (let i = 0; i < x.length; i++) if (!(x[i]! > 0)) into[this.at(i % this.size)] += dy[i]! * x[i]!;
      });
    }
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const add = io.addDx[0]!;
    for (let i = 0; i < x.length; i++) {
      const v = x[i]! > 0 ? dy[i]! : dy[i]! * a[this.at(i % this.size)]!;
      dx[i] = add ? dx[i]! + v : v;
    }
  }
}

export const prelu: OpBuilder = (c: LayerCall) => {
  const alpha = c.param("alpha");
  if (!alpha) return `${c.name} has no alpha`;
  const shape = c.inShapes[0]!;
  const aShape = alpha.variable.shape;
  if (aShape.length !== shape.length) return `${c.name}'s alpha does not match its input`;
  const strides: number[] = [];
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = aShape[d] === 1 ? 0 : s;
    s *= aShape[d]!;
  }
  return new PReluOp(c.name, alpha, sizeOf(shape), strides, shape);
};

/** Masking: zeros every position whose values all equal maskValue (its mask is made by a MaskOp). */
export class MaskingOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  constructor(
    readonly layer: string,
    private readonly cols: number,
    private readonly value: number,
  ) {}
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  private keep(x: Float32Array, r: number): boolean {
    for (let k = 0; k < this.cols; k++) if (x[r * this.cols + k] !== this.value) return true;
    return false;
  }
  forward(_ctx: StepContext, io: OpIO): void {
    const x = io.x[0]!;
    const y = io.y[0]!;
    for (let r = 0; r < y.length / this.cols; r++) {
      const k = this.keep(x, r) ? 1 : 0;
      for (let j = 0; j < this.cols; j++) y[r * this.cols + j] = x[r * this.cols + j]! * k;
    }
  }
  backward(_ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const x = io.x[0]!;
    const dy = io.dy[0]!;
    for (let r = 0; r < dy.length / this.cols; r++) {
      const k = this.keep(x, r) ? 1 : 0;
      for (let j = 0; j < this.cols; j++) {
        const at = r * this.cols + j;
        dx[at] = io.addDx[0] ? dx[at]! + dy[at]! * k : dy[at]! * k;
      }
    }
  }
}

export const masking: OpBuilder = (c: LayerCall) => {
  const shape = c.inShapes[0]!;
  return new MaskingOp(c.name, shape[shape.length - 1]!, Number(c.cfg.maskValue ?? 0));
};

/** RepeatVector: [B, d] to [B, n, d]; its gradient sums the n copies. */
export class RepeatOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  constructor(
    readonly layer: string,
    private readonly n: number,
    private readonly d: number,
  ) {}
  saved(): number[] {
    return [];
  }
  temps(batch: number): number[] {
    return [batch * this.d];
  }
  forward(_ctx: StepContext, io: OpIO): void {
    const x = io.x[0]!;
    const y = io.y[0]!;
    for (let b = 0; b < io.batch; b++)
      for (let k = 0; k < this.n; k++) y.set(x.subarray(b * this.d, (b + 1) * this.d), (b * this.n + k) * this.d);
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    emit(ctx.addon, dx, io.addDx[0]!, io.temp[0]!, (into) =>
      ctx.addon.reduce(REDUCE.Sum, io.dy[0]!, into, io.batch, this.n, this.d),
    );
  }
}

export const repeatVector: OpBuilder = (c: LayerCall) => new RepeatOp(c.name, Number(c.cfg.n), c.inShapes[0]![0]!);

/** Permute: the sample's axes reordered (dims count from 1, as Keras'). */
export class PermuteOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  private readonly size: number;
  /** For each output element of a sample, the input element it copies. */
  private readonly from: Int32Array;
  constructor(
    readonly layer: string,
    inShape: number[],
    dims: number[],
  ) {
    this.size = sizeOf(inShape);
    const outShape = dims.map((d) => inShape[d - 1]!);
    const inStrides = inShape.map((_, i) => sizeOf(inShape.slice(i + 1)));
    this.from = new Int32Array(this.size);
    const idx = new Array<number>(outShape.length).fill(0);
    for (let o = 0; o < this.size; o++) {
      let src = 0;
      dims.forEach((d, k) => (src += idx[k]! * inStrides[d - 1]!));
      this.from[o] = src;
      for (let k = outShape.length - 1; k >= 0; k--) {
        if (++idx[k]! < outShape[k]!) break;
        idx[k] = 0;
      }
    }
  }
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  forward(_ctx: StepContext, io: OpIO): void {
    const x = io.x[0]!;
    const y = io.y[0]!;
    for (let b = 0; b < io.batch; b++) {
      const base = b * this.size;
      for (let o = 0; o < this.size; o++) y[base + o] = x[base + this.from[o]!]!;
    }
  }
  backward(_ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const dy = io.dy[0]!;
    const add = io.addDx[0]!;
    for (let b = 0; b < io.batch; b++) {
      const base = b * this.size;
      for (let o = 0; o < this.size; o++) {
        const at = base + this.from[o]!;
        dx[at] = add ? dx[at]! + dy[base + o]! : dy[base + o]!;
      }
    }
  }
}

export const permute: OpBuilder = (c: LayerCall) => {
  const dims = (c.cfg.dims as number[] | undefined) ?? [];
  const shape = c.inShapes[0]!;
  if (dims.length !== shape.length) return `${c.name} permutes ${dims.length} axes of a sample of ${shape.length}`;
  return new PermuteOp(c.name, shape, dims);
};
