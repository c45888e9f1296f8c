import { BINARY } from "../../addon";
import { aleaState, drawSeed } from "../alea";
import type { LayerCall, OpBuilder } from "../layer-call";
import { emit, sizeOf, type GradIO, type Op, type OpIO, type StepContext } from "../op";

/**
 * Dropout and SpatialDropout1D in training: y = x x floor(u + keep) / keep, u uniform, drawn as
 * tf.dropout draws it (seeded by the layer's seed, else by Math.random(), one draw a call), so
 * with the same Math.random() a step draws the masks model.fit would. The mask has the noise
 * shape (SpatialDropout1D: one value per sample and channel) and broadcasts over the rest.
 */
export class DropoutOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  private readonly noise: number;
  private readonly size: number;
  constructor(
    readonly layer: string,
    private readonly shape: readonly number[],
    private readonly noiseShape: readonly number[],
    private readonly rate: number,
    private readonly seed: unknown,
  ) {
    this.noise = sizeOf(noiseShape);
    this.size = sizeOf(shape);
  }
  saved(batch: number): number[] {
    return [batch * this.noise];
  }
  temps(batch: number): number[] {
    return [batch * this.size];
  }
  /** [B, ...shape] and the mask's strides over it (0 where it broadcasts). */
  private geometry(batch: number): { dims: Int32Array; x: Int32Array; m: Int32Array } {
    const dims = [batch, ...this.shape];
    const x = new Int32Array(dims.length);
    const m = new Int32Array(dims.length);
    const noise = [batch, ...this.noiseShape];
    let sx = 1;
    let sm = 1;
    for (let d = dims.length - 1; d >= 0; d--) {
      x[d] = sx;
      m[d] = noise[d] === 1 && dims[d] !== 1 ? 0 : sm;
      sx *= dims[d]!;
      sm *= noise[d]!;
    }
    return { dims: Int32Array.from(dims), x, m };
  }
  private multiply(ctx: StepContext, a: Float32Array, mask: Float32Array, out: Float32Array, batch: number): void {
    const g = this.geometry(batch);
    ctx.addon.binary(BINARY.Multiply, a, mask, out, g.dims, g.x, g.m);
  }
  forward(ctx: StepContext, io: OpIO): void {
    const mask = io.saved[0]!;
    ctx.addon.dropoutMask(aleaState(drawSeed(this.seed)), mask, Math.fround(1 - this.rate));
    this.multiply(ctx, io.x[0]!, mask, io.y[0]!, io.batch);
  }
  backward(ctx: StepContext, io: GradIO): void {
    io.paramsDone();
    const dx = io.dx[0];
    if (!dx) return;
    emit(ctx.addon, dx, io.addDx[0]!, io.temp[0]!, (into) =>
      this.multiply(ctx, io.dy[0]!, io.saved[0]!, into, io.batch),
    );
  }
}

/** The rate's op, or null where the layer passes its input through (a rate of 0, or 1 and above, as tfjs-layers has it). */
export function dropoutRate(c: LayerCall): number | null {
  const rate = Number(c.cfg.rate ?? 0);
  return rate > 0 && rate < 1 ? rate : null;
}

export const dropout: OpBuilder = (c: LayerCall) => {
  const rate = dropoutRate(c);
  const shape = c.inShapes[0]!;
  if (rate === null) return `${c.name} passes its input through`;
  let noise: number[] = shape;
  if (c.cls === "SpatialDropout1D") noise = [1, shape[1]!];
  else if (Array.isArray(c.cfg.noiseShape)) {
    const given = c.cfg.noiseShape as Array<number | null>;
    if (given.length !== shape.length + 1)
      return `${c.name}'s noise shape [${given.join(", ")}] does not fit its input`;
    if (given[0] !== null && given[0] !== undefined) return `${c.name}'s noise shape fixes the batch size`;
    noise = given.slice(1).map((d, i) => (d === null || d === undefined ? shape[i]! : d));
    if (noise.some((d, i) => d !== 1 && d !== shape[i]))
      return `${c.name}'s noise shape [${given.join(", ")}] does not broadcast over its input`;
  }
  return new DropoutOp(c.name, shape, noise, rate, c.cfg.seed);
};
