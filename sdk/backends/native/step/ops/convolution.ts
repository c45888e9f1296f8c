import * as tf from "@tensorflow/tfjs";
import { REDUCE } from "../../addon";
import { convParams } from "../../kernels/conv";
import { CONV_COLUMNS_CAP } from "../../../../plan/memory";
import { activate, activateBackward, needsInput, stepActivation, type StepActivation } from "../activation";
import { pair, single, type LayerCall, type OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

type Pad = "same" | "valid" | [[number, number], [number, number], [number, number], [number, number]];

/** A window's geometry for the C kernels, made once per batch size. */
export class Window {
  private readonly byBatch = new Map<number, { params: Int32Array; info: tf.backend_util.Conv2DInfo }>();
  constructor(private readonly make: (batch: number) => tf.backend_util.Conv2DInfo) {}
  of(batch: number): { params: Int32Array; info: tf.backend_util.Conv2DInfo } {
    let g = this.byBatch.get(batch);
    if (!g) {
      const info = this.make(batch);
      g = { params: convParams(info), info };
      this.byBatch.set(batch, g);
    }
    return g;
  }
}

/** Columns one image of this convolution lowers into; the step lends at most CONV_COLUMNS_CAP (or one image's). */
export function columnsFor(info: tf.backend_util.Conv2DInfo, batch: number): number {
  const perImage = info.outHeight * info.outWidth * info.filterHeight * info.filterWidth * info.inChannels;
  return Math.max(1, Math.min(perImage * batch, Math.max(perImage, CONV_COLUMNS_CAP)));
}

/**
 * A convolution over NHWC images (Conv1D as images one row high), then its bias and activation:
 * y = act(conv(x, filter) + b). Depthwise when `mult` is given (filter [kh, kw, C, mult]).
 */
export class ConvOp implements Op {
  readonly params: ParamSlot[];
  readonly outputUnused: boolean;
  private readonly inSize: number;
  private readonly outSize: number;
  private readonly channels: number;

  constructor(
    readonly layer: string,
    private readonly window: Window,
    inShape4: readonly number[],
    outShape: readonly number[],
    private readonly filter: ParamSlot,
    private readonly bias: ParamSlot | null,
    private readonly act: StepActivation,
    private readonly mult: number | null,
  ) {
    this.params = bias ? [filter, bias] : [filter];
    this.outputUnused = act === "linear" || needsInput(act);
    this.inSize = sizeOf(inShape4);
    this.outSize = sizeOf(outShape);
    this.channels = outShape[outShape.length - 1]!;
  }

  saved(batch: number): number[] {
    return needsInput(this.act) ? [batch * this.outSize] : [];
  }

  temps(batch: number): number[] {
    return [Math.max(this.filter.variable.size, this.channels, batch * this.inSize)];
  }

  forward(ctx: StepContext, io: OpIO): void {
    const { params, info } = this.window.of(io.batch);
    const pre = needsInput(this.act) ? io.saved[0]! : io.y[0]!;
    const f = ctx.values(this.filter.variable);
    if (this.mult !== null) ctx.addon.depthwiseConv2d(io.x[0]!, f, pre, params, this.mult);
    else ctx.addon.conv2d(io.x[0]!, f, pre, params, ctx.columns(columnsFor(info, io.batch)));
    if (this.bias)
      ctx.addon.biasActivation(pre, ctx.values(this.bias.variable), pre.length / this.channels, this.channels, 20, 0);
    if (this.act !== "linear") activate(ctx.addon, this.act, pre, io.y[0]!, this.channels);
  }

  backward(ctx: StepContext, io: GradIO): void {
    const { addon } = ctx;
    const { params, info } = this.window.of(io.batch);
    const dz = io.dy[0]!;
    activateBackward(
      addon,
      this.act,
      dz,
      needsInput(this.act) ? io.saved[0]! : null,
      io.y[0]!,
      dz,
      this.channels,
      false,
    );
    const tmp = io.temp[0]!;
    const gf = ctx.grad(this.filter);
    if (gf) {
      emit(addon, gf.view, gf.add, tmp, (into) => {
        if (this.mult !== null) addon.depthwiseBackpropFilter(io.x[0]!, dz, into, params, this.mult);
        else addon.conv2dBackpropFilter(io.x[0]!, dz, into, params, ctx.columns(columnsFor(info, io.batch)));
      });
    }
    const gb = this.bias ? ctx.grad(this.bias) : null;
    if (gb)
      emit(addon, gb.view, gb.add, tmp, (into) =>
        addon.reduce(REDUCE.Sum, dz, into, 1, dz.length / this.channels, this.channels),
      );
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const f = ctx.values(this.filter.variable);
    emit(addon, dx, io.addDx[0]!, tmp, (into) => {
      if (this.mult !== null) addon.depthwiseBackpropInput(dz, f, into, params, this.mult);
      else addon.conv2dBackpropInput(dz, f, into, params, ctx.columns(columnsFor(info, io.batch)));
    });
  }
}

function padOf(c: LayerCall, kernel: number, dilation: number): { pad: Pad } | { why: string } {
  const p = c.cfg.padding ?? "valid";
  if (p === "same" || p === "valid") return { pad: p };
  // tfjs-layers' conv1d throws on "causal" ("not implemented yet"): such a model trains nowhere.
  (void kernel, dilation);
  return { why: `${c.name} pads by ${String(p)}` };
}

function channelsLast(c: LayerCall): string | null {
  const f = c.cfg.dataFormat;
  return f === undefined || f === null || f === "channelsLast" ? null : `${c.name} is channels-first`;
}

/** Conv2D and DepthwiseConv2D on [H, W, C] samples; Conv1D on [T, C] as [1, T, C]. */
export const conv: OpBuilder = (c: LayerCall) => {
  const act = stepActivation(c.cfg.activation);
  if (!act) return `${c.name} uses the ${String(c.cfg.activation)} activation`;
  const wrong = channelsLast(c);
  if (wrong) return wrong;
  const depthwise = c.cls === "DepthwiseConv2D";
  const filter = c.param(depthwise ? "depthwise_kernel" : "kernel");
  if (!filter) return `${c.name} has no kernel`;
  if (c.cfg.groups !== undefined && c.cfg.groups !== null && c.cfg.groups !== 1) return `${c.name} is grouped`;
  const oneD = c.cls === "Conv1D";
  const inShape = c.inShapes[0]!;
  const in4 = oneD ? [1, inShape[0]!, inShape[1]!] : inShape;
  if (in4.length !== 3) return `${c.name} takes input of shape [${inShape.join(", ")}]`;
  const strides = oneD ? ([1, single(c.cfg.strides, 1)] as [number, number]) : pair(c.cfg.strides);
  const dilations = oneD ? ([1, single(c.cfg.dilationRate, 1)] as [number, number]) : pair(c.cfg.dilationRate);
  const fshape = filter.variable.shape as number[];
  const filter4 = oneD ? [1, ...fshape] : fshape;
  const padding = padOf(c, filter4[1]!, dilations[1]);
  if ("why" in padding) return padding.why;
  const pad = padding.pad;
  if ((strides[0] > 1 || strides[1] > 1) && (dilations[0] > 1 || dilations[1] > 1))
    return `${c.name} is both strided and dilated`;
  const window = new Window((batch) =>
    tf.backend_util.computeConv2DInfo(
      [batch, ...in4] as [number, number, number, number],
      filter4 as [number, number, number, number],
      strides,
      dilations,
      pad,
      undefined,
      depthwise,
    ),
  );
  const out = c.outShapes[0]!;
  const probe = window.of(1).info;
  if (probe.outHeight * probe.outWidth * probe.outChannels !== sizeOf(out))
    return `${c.name}'s output [${out.join(", ")}] is not the convolution's`;
  const bias = c.param("bias");
  return new ConvOp(c.name, window, in4, out, filter, bias, act, depthwise ? fshape[3]! : null);
};
