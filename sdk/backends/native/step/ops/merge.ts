import { BINARY } from "../../addon";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type StepContext } from "../op";

type Kind = "Add" | "Average" | "Multiply" | "Maximum" | "Minimum";

/**
 * Add, Average, Multiply, Maximum and Minimum of inputs of one shape, left to right in float32
 * as tfjs-layers' merge functions fold them. Maximum and Minimum pass each element's gradient as
 * tf.maximum's does at every fold: to the left operand where it is >= (<=) the right one.
 */
export class MergeOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  constructor(
    readonly layer: string,
    private readonly kind: Kind,
    private readonly n: number,
    private readonly size: number,
  ) {}
  saved(): number[] {
    return [];
  }
  temps(batch: number): number[] {
    return [batch * this.size];
  }
  forward(ctx: StepContext, io: OpIO): void {
    const y = io.y[0]!;
    const xs = io.x;
    if (this.kind === "Add" || this.kind === "Average") {
      ctx.addon.addN(xs as Float32Array[], y);
      if (this.kind === "Average") ctx.addon.scale(y, Math.fround(1 / this.n));
      return;
    }
    y.set(xs[0]!.subarray(0, y.length));
    for (let k = 1; k < this.n; k++) {
      const x = xs[k]!;
      if (this.kind === "Multiply") for (let i = 0; i < y.length; i++) y[i] = y[i]! * x[i]!;
      else if (this.kind === "Maximum") for (let i = 0; i < y.length; i++) y[i] = y[i]! >= x[i]! ? y[i]! : x[i]!;
      else for (let i = 0; i < y.length; i++) y[i] = y[i]! <= x[i]! ? y[i]! : x[i]!;
    }
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dy = io.dy[0]!;
    for (let k = 0; k < this.n; k++) {
      const dx = io.dx[k];
      if (!dx) continue;
      emit(ctx.addon, dx, io.addDx[k]!, io.temp[0]!, (into) => this.gradient(ctx, io, k, dy, into));
    }
  }
  private gradient(ctx: StepContext, io: GradIO, k: number, dy: Float32Array, into: Float32Array): void {
    if (this.kind === "Add") return into.set(dy.subarray(0, into.length));
    if (this.kind === "Average") {
      into.set(dy.subarray(0, into.length));
      return ctx.addon.scale(into, Math.fround(1 / this.n));
    }
    const xs = io.x;
    if (this.kind === "Multiply" && this.n === 2) {
      const n = into.length;
      const shape = Int32Array.of(n);
      return ctx.addon.binary(BINARY.Multiply, dy, xs[1 - k]!, into, shape, Int32Array.of(1), Int32Array.of(1));
    }
    for (let i = 0; i < into.length; i++) into[i] = this.elementGradient(xs, k, i, dy[i]!);
  }
  /** d(fold)/d(x_k) at element i, times dy. */
  private elementGradient(xs: readonly Float32Array[], k: number, i: number, dy: number): number {
    if (this.kind === "Multiply") {
      let p = dy;
      for (let j = 0; j < this.n; j++) if (j !== k) p = Math.fround(p * xs[j]![i]!);
      return p;
    }
    // Fold left: acc_0 = x_0, acc_j = op(acc_{j-1}, x_j); x_k's share survives every later fold it wins.
    const wins = (a: number, b: number): boolean => (this.kind === "Maximum" ? a >= b : a <= b);
    let acc = xs[0]![i]!;
    let holder = 0;
    for (let j = 1; j < this.n; j++) {
      const v = xs[j]![i]!;
      if (!wins(acc, v)) {
        acc = v;
        holder = j;
      }
    }
    return holder === k ? dy : 0;
  }
}

export const merge: OpBuilder = (c: LayerCall) => {
  const shape = c.inShapes[0]!;
  if (c.inShapes.some((s) => s.length !== shape.length || s.some((d, i) => d !== shape[i])))
    return `${c.name} merges inputs of different shapes (${c.inShapes.map((s) => `[${s.join(", ")}]`).join(", ")})`;
  return new MergeOp(c.name, c.cls as Kind, c.inShapes.length, sizeOf(shape));
};

/** Concatenate along one axis: each input's block of every outer row, side by side. */
export class ConcatOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  private readonly outer: number;
  private readonly blocks: number[];
  private readonly row: number;
  constructor(
    readonly layer: string,
    shapes: readonly number[][],
    axis: number,
  ) {
    // axis counts the batch: rows of the outer dims (per sample), blocks from the axis on.
    this.outer = sizeOf(shapes[0]!.slice(0, axis - 1));
    this.blocks = shapes.map((s) => sizeOf(s.slice(axis - 1)));
    this.row = this.blocks.reduce((a, b) => a + b, 0);
  }
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  forward(_ctx: StepContext, io: OpIO): void {
    const y = io.y[0]!;
    const rows = io.batch * this.outer;
    let at = 0;
    this.blocks.forEach((w, k) => {
      const x = io.x[k]!;
      for (let r = 0; r < rows; r++) y.set(x.subarray(r * w, r * w + w), r * this.row + at);
      at += w;
    });
  }
  backward(_ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dy = io.dy[0]!;
    const rows = io.batch * this.outer;
    let at = 0;
    this.blocks.forEach((w, k) => {
      const dx = io.dx[k];
      if (dx) {
        for (let r = 0; r < rows; r++) {
          const src = dy.subarray(r * this.row + at, r * this.row + at + w);
          if (io.addDx[k]) for (let i = 0; i < w; i++) dx[r * w + i] = dx[r * w + i]! + src[i]!;
          else dx.set(src, r * w);
        }
      }
      at += w;
    });
  }
}

export const concatenate: OpBuilder = (c: LayerCall) => {
  const rank = c.inShapes[0]!.length + 1;
  const given = Number(c.cfg.axis ?? -1);
  const axis = given < 0 ? given + rank : given;
  if (axis < 1 || axis >= rank) return `${c.name} concatenates along axis ${given}`;
  const others = (s: number[]): string => s.filter((_, i) => i !== axis - 1).join(",");
  if (c.inShapes.some((s) => s.length !== rank - 1 || others(s) !== others(c.inShapes[0]!)))
    return `${c.name} concatenates inputs whose other axes differ`;
  return new ConcatOp(c.name, c.inShapes, axis);
};
