import * as tf from "@tensorflow/tfjs";
import { REDUCE } from "../addon";
import { convInfo, poolInfo } from "../../geometry";
import { convParams, scratchFor } from "../kernels/conv";
import { activationBackward, biasThenActivate, type StepActivation } from "./activation";
import { firstOffset, gradientView, trained, type GradientSlot, type StepContext, type StepOp } from "./op";

export interface WindowConfig {
  kernel: [number, number];
  strides: [number, number];
  padding: "valid" | "same";
}

/** The C kernels' geometry for a batch size; the same batch sizes recur, so each is made once. */
class Geometry {
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

/** Conv2D, channels last, dilation 1: out = act(conv(x, filter) + b). */
export class ConvOp implements StepOp {
  readonly alias = false;
  readonly trainable: boolean;
  readonly gradientFrom: number | null;
  private readonly geometry: Geometry;

  constructor(readonly layer: string, inShape: readonly number[], readonly outShape: readonly number[], cfg: WindowConfig, private readonly filter: GradientSlot, private readonly bias: GradientSlot | null, private readonly act: StepActivation) {
    const filterShape = filter.variable.shape;
    this.geometry = new Geometry((batch) => convInfo([batch, ...inShape], filterShape, { strides: cfg.strides, pad: cfg.padding, dilations: 1 }));
    this.trainable = trained(filter) !== null || trained(bias) !== null;
    this.gradientFrom = firstOffset(filter, bias);
  }

  forward(ctx: StepContext, x: Float32Array, out: Float32Array, batch: number): void {
    const { params, info } = this.geometry.of(batch);
    ctx.addon.conv2d(x, ctx.values(this.filter.variable), out, params, scratchFor(ctx, info));
    biasThenActivate(ctx.addon, out, this.bias ? ctx.values(this.bias.variable) : null, out.length / info.outChannels, info.outChannels, this.act);
  }

  backward(ctx: StepContext, x: Float32Array, out: Float32Array, dy: Float32Array, dx: Float32Array | null, batch: number, grads: Float32Array, written?: () => void): void {
    const { params, info } = this.geometry.of(batch);
    const { addon } = ctx;
    const rows = out.length / info.outChannels;
    activationBackward(addon, dy, out, rows, info.outChannels, this.act);
    const filter = trained(this.filter);
    const bias = trained(this.bias);
    if (filter) addon.conv2dBackpropFilter(x, dy, gradientView(filter, grads, ctx), params, scratchFor(ctx, info));
    if (bias) addon.reduce(REDUCE.Sum, dy, gradientView(bias, grads, ctx), 1, rows, info.outChannels);
    written?.();
    if (dx) addon.conv2dBackpropInput(dy, ctx.values(this.filter.variable), dx, params, scratchFor(ctx, info));
  }
}

/** MaxPooling2D and AveragePooling2D, channels last. */
export class PoolOp implements StepOp {
  readonly alias = false;
  readonly trainable = false;
  readonly gradientFrom = null;
  private readonly geometry: Geometry;

  constructor(readonly layer: string, inShape: readonly number[], readonly outShape: readonly number[], cfg: WindowConfig, private readonly kind: "max" | "avg") {
    this.geometry = new Geometry((batch) => poolInfo([batch, ...inShape], { filterSize: cfg.kernel, strides: cfg.strides, pad: cfg.padding }));
  }

  forward(ctx: StepContext, x: Float32Array, out: Float32Array, batch: number): void {
    const { params } = this.geometry.of(batch);
    if (this.kind === "max") ctx.addon.maxPool(x, out, params);
    else ctx.addon.avgPool(x, out, params);
  }

  backward(ctx: StepContext, x: Float32Array, _out: Float32Array, dy: Float32Array, dx: Float32Array | null, batch: number): void {
    if (!dx) return;
    const { params } = this.geometry.of(batch);
    if (this.kind === "max") ctx.addon.maxPoolGrad(dy, x, dx, params);
    else ctx.addon.avgPoolGrad(dy, dx, params);
  }
}
