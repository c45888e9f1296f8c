import { REDUCE } from "../../addon";
import { activate, activateBackward, needsInput, stepActivation, type StepActivation } from "../activation";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

/** Dense over the last axis, any number of leading axes: y = act(x W + b). */
export class DenseOp implements Op {
  readonly params: ParamSlot[];
  readonly outputUnused: boolean;
  private readonly rowsPerSample: number;

  constructor(
    readonly layer: string,
    inShape: readonly number[],
    private readonly inUnits: number,
    private readonly units: number,
    private readonly kernel: ParamSlot,
    private readonly bias: ParamSlot | null,
    private readonly act: StepActivation,
  ) {
    this.rowsPerSample = sizeOf(inShape) / inUnits;
    this.params = bias ? [kernel, bias] : [kernel];
    this.outputUnused = act === "linear" || needsInput(act);
  }

  saved(batch: number): number[] {
    // The pre-activation, where the activation's gradient needs it.
    return needsInput(this.act) ? [batch * this.rowsPerSample * this.units] : [];
  }

  temps(batch: number): number[] {
    return [Math.max(this.units, batch * this.rowsPerSample * this.units)];
  }

  forward(ctx: StepContext, io: OpIO): void {
    const rows = io.batch * this.rowsPerSample;
    const pre = needsInput(this.act) ? io.saved[0]! : io.y[0]!;
    ctx.addon.sgemm(
      0,
      0,
      rows,
      this.units,
      this.inUnits,
      1,
      io.x[0]!,
      this.inUnits,
      ctx.values(this.kernel.variable),
      this.units,
      0,
      pre,
      this.units,
    );
    if (this.bias) ctx.addon.biasActivation(pre, ctx.values(this.bias.variable), rows, this.units, 20, 0);
    if (this.act !== "linear" || pre !== io.y[0]) activate(ctx.addon, this.act, pre, io.y[0]!, this.units);
  }

  backward(ctx: StepContext, io: GradIO): void {
    const { addon } = ctx;
    const rows = io.batch * this.rowsPerSample;
    const dz = io.dy[0]!;
    activateBackward(addon, this.act, dz, needsInput(this.act) ? io.saved[0]! : null, io.y[0]!, dz, this.units, false);
    const gk = ctx.grad(this.kernel);
    if (gk)
      addon.sgemm(
        1,
        0,
        this.inUnits,
        this.units,
        rows,
        1,
        io.x[0]!,
        this.inUnits,
        dz,
        this.units,
        gk.add ? 1 : 0,
        gk.view,
        this.units,
      );
    const gb = this.bias ? ctx.grad(this.bias) : null;
    if (gb)
      emit(addon, gb.view, gb.add, io.temp[0]!, (into) => addon.reduce(REDUCE.Sum, dz, into, 1, rows, this.units));
    io.paramsDone();
    const dx = io.dx[0];
    if (dx)
      addon.sgemm(
        0,
        1,
        rows,
        this.inUnits,
        this.units,
        1,
        dz,
        this.units,
        ctx.values(this.kernel.variable),
        this.units,
        io.addDx[0] ? 1 : 0,
        dx,
        this.inUnits,
      );
  }
}

export const dense: OpBuilder = (c: LayerCall) => {
  const act = stepActivation(c.cfg.activation);
  if (!act) return `${c.name} uses the ${String(c.cfg.activation)} activation`;
  const kernel = c.param("kernel");
  if (!kernel) return `${c.name} has no kernel`;
  const inShape = c.inShapes[0]!;
  const [inUnits, units] = kernel.variable.shape as [number, number];
  return new DenseOp(c.name, inShape, inUnits, units, kernel, c.param("bias"), act);
};
