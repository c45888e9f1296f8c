import * as tf from "@tensorflow/tfjs";
import { REDUCE } from "../../addon";
import { activate, activateBackward, needsInput, stepActivation, type StepActivation } from "../activation";
import { pair, type LayerCall, type OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";
import { Window } from "./convolution";

/**
 * SeparableConv2D as TF.js computes it: a depthwise convolution (each input channel its
 * `mult` filters), then a 1x1 convolution (a GEMM over every pixel), its bias and activation.
 */
export class SeparableOp implements Op {
  readonly params: ParamSlot[];
  readonly outputUnused: boolean;
  private readonly inSize: number;
  private readonly midSize: number;
  private readonly mid: number;

  constructor(
    readonly layer: string,
    private readonly window: Window,
    inShape: readonly number[],
    private readonly pixels: number,
    private readonly depthwise: ParamSlot,
    private readonly pointwise: ParamSlot,
    private readonly bias: ParamSlot | null,
    private readonly filters: number,
    private readonly mult: number,
    private readonly act: StepActivation,
  ) {
    this.params = [depthwise, pointwise, ...(bias ? [bias] : [])];
    this.outputUnused = act === "linear" || needsInput(act);
    this.inSize = sizeOf(inShape);
    this.mid = inShape[2]! * mult;
    this.midSize = pixels * this.mid;
  }

  saved(batch: number): number[] {
    // The depthwise output, and the pre-activation where the activation's gradient needs it.
    return [batch * this.midSize, needsInput(this.act) ? batch * this.pixels * this.filters : 0];
  }

  temps(batch: number): number[] {
    return [Math.max(batch * this.midSize, batch * this.inSize, this.depthwise.variable.size, this.filters)];
  }

  forward(ctx: StepContext, io: OpIO): void {
    const { addon } = ctx;
    const { params } = this.window.of(io.batch);
    const mid = io.saved[0]!;
    const rows = io.batch * this.pixels;
    const pre = needsInput(this.act) ? io.saved[1]! : io.y[0]!;
    addon.depthwiseConv2d(io.x[0]!, ctx.values(this.depthwise.variable), mid, params, this.mult);
    addon.sgemm(
      0,
      0,
      rows,
      this.filters,
      this.mid,
      1,
      mid,
      this.mid,
      ctx.values(this.pointwise.variable),
      this.filters,
      0,
      pre,
      this.filters,
    );
    if (this.bias) addon.biasActivation(pre, ctx.values(this.bias.variable), rows, this.filters, 20, 0);
    if (this.act !== "linear") activate(addon, this.act, pre, io.y[0]!, this.filters);
  }

  backward(ctx: StepContext, io: GradIO): void {
    const { addon } = ctx;
    const { params } = this.window.of(io.batch);
    const rows = io.batch * this.pixels;
    const mid = io.saved[0]!;
    const dz = io.dy[0]!;
    const tmp = io.temp[0]!;
    activateBackward(
      addon,
      this.act,
      dz,
      needsInput(this.act) ? io.saved[1]! : null,
      io.y[0]!,
      dz,
      this.filters,
      false,
    );
    this.pointwiseBackward(ctx, dz, mid, tmp, rows);
    const gd = ctx.grad(this.depthwise);
    if (gd)
      emit(addon, gd.view, gd.add, tmp, (into) =>
        addon.depthwiseBackpropFilter(io.x[0]!, mid, into, params, this.mult),
      );
    io.paramsDone();
    const dx = io.dx[0];
    if (dx)
      emit(addon, dx, io.addDx[0]!, tmp, (into) =>
        addon.depthwiseBackpropInput(mid, ctx.values(this.depthwise.variable), into, params, this.mult),
      );
  }

  /**
   * The pointwise kernel's and the bias's gradients, and dL/d(depthwise output) written over
   * `mid` (its values are not needed again).
   */
  private pointwiseBackward(
    ctx: StepContext,
    dz: Float32Array,
    mid: Float32Array,
    tmp: Float32Array,
    rows: number,
  ): void {
    const { addon } = ctx;
    const gp = ctx.grad(this.pointwise);
    if (gp)
      addon.sgemm(
        1,
        0,
        this.mid,
        this.filters,
        rows,
        1,
        mid,
        this.mid,
        dz,
        this.filters,
        gp.add ? 1 : 0,
        gp.view,
        this.filters,
      );
    const gb = this.bias ? ctx.grad(this.bias) : null;
    if (gb) emit(addon, gb.view, gb.add, tmp, (into) => addon.reduce(REDUCE.Sum, dz, into, 1, rows, this.filters));
    addon.sgemm(
      0,
      1,
      rows,
      this.mid,
      this.filters,
      1,
      dz,
      this.filters,
      ctx.values(this.pointwise.variable),
      this.filters,
      0,
      mid,
      this.mid,
    );
  }
}

export const separable: OpBuilder = (c: LayerCall) => {
  const act = stepActivation(c.cfg.activation);
  if (!act) return `${c.name} uses the ${String(c.cfg.activation)} activation`;
  const f = c.cfg.dataFormat;
  if (f !== undefined && f !== null && f !== "channelsLast") return `${c.name} is channels-first`;
  const padding = c.cfg.padding ?? "valid";
  if (padding !== "same" && padding !== "valid") return `${c.name} pads by ${String(padding)}`;
  const depthwise = c.param("depthwise_kernel");
  const pointwise = c.param("pointwise_kernel");
  if (!depthwise || !pointwise) return `${c.name} is not built`;
  const inShape = c.inShapes[0]!;
  if (inShape.length !== 3) return `${c.name} takes input of shape [${inShape.join(", ")}]`;
  const strides = pair(c.cfg.strides);
  const dilations = pair(c.cfg.dilationRate);
  const dshape = depthwise.variable.shape as [number, number, number, number];
  const window = new Window((batch) =>
    tf.backend_util.computeConv2DInfo(
      [batch, ...inShape] as [number, number, number, number],
      dshape,
      strides,
      dilations,
      padding,
      undefined,
      true,
    ),
  );
  const info = window.of(1).info;
  const out = c.outShapes[0]!;
  const filters = out[out.length - 1]!;
  if (info.outHeight * info.outWidth * filters !== sizeOf(out)) return `${c.name}'s output is not the convolution's`;
  return new SeparableOp(
    c.name,
    window,
    inShape,
    info.outHeight * info.outWidth,
    depthwise,
    pointwise,
    c.param("bias"),
    filters,
    dshape[3],
    act,
  );
};
