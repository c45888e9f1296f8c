import type { LayerCall, OpBuilder } from "../layer-call";
import { sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

/**
 * BatchNormalization over the last axis with the batch's statistics, as tfjs-layers trains it
 * (whatever `trainable` says: a frozen layer keeps its gamma and beta but still normalizes by the
 * batch and moves its averages), and the moving averages moved in place by the batch's mean and
 * biased variance: moving -= (moving - batch) x (1 - momentum), in float32.
 */
export class BatchNormOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  private readonly decay: number;

  constructor(
    readonly layer: string,
    private readonly channels: number,
    private readonly rowsPerSample: number,
    private readonly gamma: ParamSlot,
    private readonly beta: ParamSlot,
    private readonly movingMean: ParamSlot,
    private readonly movingVariance: ParamSlot,
    private readonly eps: number,
    momentum: number,
  ) {
    this.params = [gamma, beta, movingMean, movingVariance];
    this.decay = Math.fround(1 - momentum);
  }

  saved(): number[] {
    return [this.channels, this.channels];
  }

  temps(): number[] {
    return [this.channels];
  }

  forward(ctx: StepContext, io: OpIO): void {
    const [mean, invstd] = io.saved as [Float32Array, Float32Array];
    const variance = io.temp[0]!;
    const rows = io.batch * this.rowsPerSample;
    ctx.addon.bnForward(
      io.x[0]!,
      io.y[0]!,
      rows,
      this.channels,
      ctx.values(this.gamma.variable),
      ctx.values(this.beta.variable),
      this.eps,
      mean,
      variance,
      invstd,
    );
    this.moveAverage(ctx.values(this.movingMean.variable), mean);
    this.moveAverage(ctx.values(this.movingVariance.variable), variance);
  }

  private moveAverage(moving: Float32Array, batch: Float32Array): void {
    for (let c = 0; c < this.channels; c++) {
      const delta = Math.fround(Math.fround(moving[c]! - batch[c]!) * this.decay);
      moving[c] = moving[c]! - delta;
    }
  }

  backward(ctx: StepContext, io: GradIO): void {
    const [mean, invstd] = io.saved as [Float32Array, Float32Array];
    const rows = io.batch * this.rowsPerSample;
    const gg = ctx.grad(this.gamma);
    const gb = ctx.grad(this.beta);
    const dx = io.dx[0] ?? null;
    const dxAdd = io.addDx[0] ? 1 : 0;
    // Weight gradients first (their all-reduce may start), then dx: the kernel does both in its passes, so both come at once.
    ctx.addon.bnBackward(
      io.dy[0]!,
      io.x[0]!,
      rows,
      this.channels,
      mean,
      invstd,
      ctx.values(this.gamma.variable),
      dx,
      dxAdd,
      gg?.view ?? null,
      gb?.view ?? null,
      gg?.add || gb?.add ? 1 : 0,
    );
    io.paramsDone();
  }
}

export const batchNorm: OpBuilder = (c: LayerCall) => {
  const inShape = c.inShapes[0]!;
  const axis = Number(c.cfg.axis ?? -1);
  if (axis !== -1 && axis !== inShape.length) return `${c.name} normalizes axis ${axis}, not the last`;
  const gamma = c.param("gamma");
  const beta = c.param("beta");
  const mean = c.param("moving_mean");
  const variance = c.param("moving_variance");
  // tfjs-layers reads gamma and beta when it trains: a layer without either cannot train in model.fit.
  if (!gamma || !beta || !mean || !variance)
    return `${c.name} has no gamma or beta (scale or center false), which tfjs-layers cannot train`;
  if ((gamma.offset === null) !== (beta.offset === null)) return `${c.name} trains only one of gamma and beta`;
  const channels = inShape[inShape.length - 1]!;
  return new BatchNormOp(
    c.name,
    channels,
    sizeOf(inShape) / channels,
    gamma,
    beta,
    mean,
    variance,
    Number(c.cfg.epsilon ?? 1e-3),
    Number(c.cfg.momentum ?? 0.99),
  );
};

/** LayerNormalization over the trailing axes it names (the last by default). */
export class LayerNormOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  constructor(
    readonly layer: string,
    private readonly cols: number,
    private readonly rowsPerSample: number,
    private readonly gamma: ParamSlot | null,
    private readonly beta: ParamSlot | null,
    private readonly eps: number,
  ) {
    this.params = [gamma, beta].filter((p): p is ParamSlot => p !== null);
  }

  saved(batch: number): number[] {
    const rows = batch * this.rowsPerSample;
    return [rows, rows];
  }

  temps(): number[] {
    return [];
  }

  forward(ctx: StepContext, io: OpIO): void {
    const [mean, invstd] = io.saved as [Float32Array, Float32Array];
    const g = this.gamma ? ctx.values(this.gamma.variable) : null;
    const b = this.beta ? ctx.values(this.beta.variable) : null;
    ctx.addon.lnForward(io.x[0]!, io.y[0]!, io.batch * this.rowsPerSample, this.cols, g, b, this.eps, mean, invstd);
  }

  backward(ctx: StepContext, io: GradIO): void {
    const [mean, invstd] = io.saved as [Float32Array, Float32Array];
    const gg = this.gamma ? ctx.grad(this.gamma) : null;
    const gb = this.beta ? ctx.grad(this.beta) : null;
    const g = this.gamma ? ctx.values(this.gamma.variable) : null;
    ctx.addon.lnBackward(
      io.dy[0]!,
      io.x[0]!,
      io.batch * this.rowsPerSample,
      this.cols,
      mean,
      invstd,
      g,
      io.dx[0] ?? null,
      io.addDx[0] ? 1 : 0,
      gg?.view ?? null,
      gb?.view ?? null,
      gg?.add || gb?.add ? 1 : 0,
    );
    io.paramsDone();
  }
}

export const layerNorm: OpBuilder = (c: LayerCall) => {
  const inShape = c.inShapes[0]!;
  const rank = inShape.length + 1;
  const given = c.cfg.axis ?? -1;
  const axes = (Array.isArray(given) ? given : [given])
    .map((a) => (Number(a) < 0 ? Number(a) + rank : Number(a)))
    .sort((a, b) => a - b);
  const trailing = axes.every((a, i) => a === rank - axes.length + i);
  if (!trailing || axes.some((a) => a < 1))
    return `${c.name} normalizes axes [${axes.join(", ")}], not the trailing ones`;
  const cols = sizeOf(inShape.slice(inShape.length - axes.length));
  return new LayerNormOp(
    c.name,
    cols,
    sizeOf(inShape) / cols,
    c.param("gamma"),
    c.param("beta"),
    Number(c.cfg.epsilon ?? 1e-3),
  );
};
