import type { StepActivation } from "./activation";
import { activationBackward, biasThenActivate } from "./activation";
import { REDUCE } from "../addon";
import { firstOffset, gradientView, sizeOf, trained, type GradientSlot, type StepContext, type StepOp } from "./op";

/** Dense over the last axis: out = act(x W + b), any number of leading axes. */
export class DenseOp implements StepOp {
  readonly alias = false;
  readonly trainable: boolean;
  readonly gradientFrom: number | null;
  private readonly inUnits: number;
  private readonly rowsPerSample: number;

  constructor(readonly layer: string, inShape: readonly number[], readonly outShape: readonly number[], private readonly kernel: GradientSlot, private readonly bias: GradientSlot | null, private readonly act: StepActivation) {
    this.inUnits = inShape[inShape.length - 1]!;
    this.rowsPerSample = sizeOf(inShape) / this.inUnits;
    this.trainable = trained(kernel) !== null || trained(bias) !== null;
    this.gradientFrom = firstOffset(kernel, bias);
  }

  private get units(): number {
    return this.outShape[this.outShape.length - 1]!;
  }

  forward(ctx: StepContext, x: Float32Array, out: Float32Array, batch: number): void {
    const rows = batch * this.rowsPerSample;
    ctx.addon.batchMatMul(x, ctx.values(this.kernel.variable), out, 1, 0, 0, rows, this.units, this.inUnits, 0, 0);
    biasThenActivate(ctx.addon, out, this.bias ? ctx.values(this.bias.variable) : null, rows, this.units, this.act);
  }

  backward(ctx: StepContext, x: Float32Array, out: Float32Array, dy: Float32Array, dx: Float32Array | null, batch: number, grads: Float32Array, written?: () => void): void {
    const rows = batch * this.rowsPerSample;
    const { addon } = ctx;
    activationBackward(addon, dy, out, rows, this.units, this.act);
    // dW = x^T dz, db = column sums of dz, dx = dz W^T
    const kernel = trained(this.kernel);
    const bias = trained(this.bias);
    if (kernel) addon.batchMatMul(x, dy, gradientView(kernel, grads, ctx), 1, 0, 0, this.inUnits, this.units, rows, 1, 0);
    if (bias) addon.reduce(REDUCE.Sum, dy, gradientView(bias, grads, ctx), 1, rows, this.units);
    written?.();
    if (dx) addon.batchMatMul(dy, ctx.values(this.kernel.variable), dx, 1, 0, 0, rows, this.inUnits, this.units, 0, 1);
  }
}

/** Flatten and Reshape: the same values under another shape. */
export class AliasOp implements StepOp {
  readonly alias = true;
  readonly trainable = false;
  readonly gradientFrom = null;
  constructor(readonly layer: string, readonly outShape: readonly number[]) {}
  forward(): void {}
  backward(): void {}
}

/** A standalone Activation layer. */
export class ActivationOp implements StepOp {
  readonly alias = false;
  readonly trainable = false;
  readonly gradientFrom = null;
  constructor(readonly layer: string, readonly outShape: readonly number[], private readonly act: StepActivation) {}

  private get cols(): number {
    return this.outShape[this.outShape.length - 1] ?? 1;
  }

  forward(ctx: StepContext, x: Float32Array, out: Float32Array, batch: number): void {
    out.set(x.subarray(0, out.length));
    biasThenActivate(ctx.addon, out, null, (batch * sizeOf(this.outShape)) / this.cols, this.cols, this.act);
  }

  backward(ctx: StepContext, _x: Float32Array, out: Float32Array, dy: Float32Array, dx: Float32Array | null, batch: number): void {
    if (!dx) return;
    activationBackward(ctx.addon, dy, out, (batch * sizeOf(this.outShape)) / this.cols, this.cols, this.act);
    dx.set(dy.subarray(0, dx.length));
  }
}
