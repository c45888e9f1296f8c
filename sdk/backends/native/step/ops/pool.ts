import * as tf from "@tensorflow/tfjs";
import { BINARY, REDUCE } from "../../addon";
import { pair, single, type LayerCall, type OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type StepContext } from "../op";
import { Window } from "./convolution";

/** MaxPooling and AveragePooling, 1D (as images one column wide, as tfjs-layers pools them) and 2D. */
export class PoolOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  private readonly inSize: number;
  constructor(
    readonly layer: string,
    private readonly window: Window,
    inShape4: readonly number[],
    private readonly kind: "max" | "avg",
  ) {
    this.inSize = sizeOf(inShape4);
  }
  saved(): number[] {
    return [];
  }
  temps(batch: number): number[] {
    return [batch * this.inSize];
  }
  forward(ctx: StepContext, io: OpIO): void {
    const { params } = this.window.of(io.batch);
    if (this.kind === "max") ctx.addon.maxPool(io.x[0]!, io.y[0]!, params);
    else ctx.addon.avgPool(io.x[0]!, io.y[0]!, params);
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const { params } = this.window.of(io.batch);
    emit(ctx.addon, dx, io.addDx[0]!, io.temp[0]!, (into) => {
      if (this.kind === "max") ctx.addon.maxPoolGrad(io.dy[0]!, io.x[0]!, into, params);
      else ctx.addon.avgPoolGrad(io.dy[0]!, into, params);
    });
  }
}

export const pool: OpBuilder = (c: LayerCall) => {
  const f = c.cfg.dataFormat;
  if (f !== undefined && f !== null && f !== "channelsLast") return `${c.name} is channels-first`;
  const padding = c.cfg.padding ?? "valid";
  if (padding !== "same" && padding !== "valid") return `${c.name} pads by ${String(padding)}`;
  const oneD = c.cls.endsWith("1D");
  const inShape = c.inShapes[0]!;
  // tfjs-layers pools [T, C] as [T, 1, C] with a window of [poolSize, 1].
  const in4 = oneD ? [inShape[0]!, 1, inShape[1]!] : inShape;
  if (in4.length !== 3) return `${c.name} takes input of shape [${inShape.join(", ")}]`;
  const size: [number, number] = oneD ? [single(c.cfg.poolSize, 2), 1] : pair(c.cfg.poolSize, 2);
  const strides: [number, number] = oneD
    ? [single(c.cfg.strides, size[0]), 1]
    : c.cfg.strides == null
      ? size
      : pair(c.cfg.strides);
  const window = new Window((batch) =>
    tf.backend_util.computePool2DInfo([batch, ...in4] as [number, number, number, number], size, strides, 1, padding),
  );
  const probe = window.of(1).info;
  if (probe.outHeight * probe.outWidth * probe.outChannels !== sizeOf(c.outShapes[0]!))
    return `${c.name}'s output is not the pooling's`;
  return new PoolOp(c.name, window, in4, c.cls.startsWith("Max") ? "max" : "avg");
};

/** GlobalAveragePooling and GlobalMaxPooling, 1D and 2D: over every axis but the batch and the channels. */
export class GlobalPoolOp implements Op {
  readonly outputUnused: boolean;
  readonly params = [];
  constructor(
    readonly layer: string,
    private readonly positions: number,
    private readonly channels: number,
    private readonly kind: "max" | "avg",
  ) {
    // The maximum's gradient finds the maximum again; the mean's needs nothing.
    this.outputUnused = kind === "avg";
  }
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  forward(ctx: StepContext, io: OpIO): void {
    ctx.addon.reduce(
      this.kind === "avg" ? REDUCE.Mean : REDUCE.Max,
      io.x[0]!,
      io.y[0]!,
      io.batch,
      this.positions,
      this.channels,
    );
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    const add = io.addDx[0]!;
    const { positions: n, channels: C } = this;
    if (this.kind === "avg" && !add) {
      // dx[b, p, c] = dy[b, c] / n, broadcast over the positions.
      ctx.addon.binary(
        BINARY.Multiply,
        io.dy[0]!,
        Float32Array.of(1 / n),
        dx,
        Int32Array.of(io.batch, n, C),
        Int32Array.of(C, 0, 1),
        Int32Array.of(0, 0, 0),
      );
      return;
    }
    const dy = io.dy[0]!;
    const x = io.x[0]!;
    const y = io.y[0]!;
    for (let b = 0; b < io.batch; b++) {
      const base = b * n * C;
      for (let p = 0; p < n; p++) {
        for (let c = 0; c < C; c++) {
          const at = base + p * C + c;
          // tf.max's gradient goes to every position equal to the maximum.
          const g = this.kind === "avg" ? Math.fround(dy[b * C + c]! / n) : x[at] === y[b * C + c] ? dy[b * C + c]! : 0;
          dx[at] = add ? dx[at]! + g : g;
        }
      }
    }
  }
}

export const globalPool: OpBuilder = (c: LayerCall) => {
  const f = c.cfg.dataFormat;
  if (f !== undefined && f !== null && f !== "channelsLast") return `${c.name} is channels-first`;
  const inShape = c.inShapes[0]!;
  const channels = inShape[inShape.length - 1]!;
  return new GlobalPoolOp(c.name, sizeOf(inShape) / channels, channels, c.cls.includes("Max") ? "max" : "avg");
};
