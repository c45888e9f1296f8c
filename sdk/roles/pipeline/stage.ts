import type { LoadOf } from "../../protocol/messages";
import { classWeighted } from "../class-weights";
import * as tf from "@tensorflow/tfjs";
import { ModelError, ProtocolError } from "../../errors/errors";
import { formatBytes, optimizerSlots } from "../../plan/memory";
import { summarizeModel } from "../../plan/model-summary";
import { stageCost } from "../../plan/partition";
import { actionsInFlight, type Action } from "../../plan/schedules";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { buildModel, compiledLoss, readWeights, tensorOf, type WeightOrder } from "../../model/model-io";
import type { RoleEnv, StepTimes, WorkerRole } from "../role";
import { makeUpdateRule } from "../update-rule";
import type { OptimizerState, UpdateRule } from "../tfjs-update";
import { seedDropout, stageTopology, stageWeightOrder } from "./stage-model";
import { inputNonFinite, labelTensor, metricScalars, nonFiniteIn, survivedStepError, type NonFinite } from "../step-health";
import { ModelState } from "../model-state";
import { onDevice, transfers } from "../device-io";
import { agreeAcrossStages } from "./stage-agreement";
import { copyOut, deviceSink, hostSink, type ActionTimings, type StageIO, type StageRun } from "./stage-run";
import type { MetricSpec } from "../../protocol/metric-spec";
import { createOptimizer } from "../../model/optimizers";


export interface StageStepResult extends StepTimes {
  /** When each forward (F) and backward (B) of a micro-batch ran, in ms from the step's start. */
  actions: ActionTimings;
  inFlightMax: number;
  nonFinite?: NonFinite;
  skipped?: boolean;
}

type Stage = LoadOf<"stage">["stage"];

/**
 * One stage of a pipeline on a worker: runs its schedule's actions in order. F(m) runs the
 * stage's layers on micro-batch m and sends the result on; B(m) recomputes the forward pass with
 * TF.js's autograd, takes the gradient arriving from the next stage (the last stage starts from
 * its share of the loss), accumulates the layers' gradients, and sends the input's gradient
 * back. After the last action the accumulated gradients are summed with the stage's replicas
 * and one optimizer update is applied.
 */
export class StageRuntime implements WorkerRole {
  private readonly vars: tf.Variable[];
  private readonly offsets: number[];
  readonly gradientLength: number;
  private readonly actions: readonly Action[];
  private readonly update: UpdateRule;
  private readonly last: boolean;
  private readonly state: ModelState;
  private readonly names: string[];
  private readonly sizes: number[];

  private constructor(
    readonly model: tf.LayersModel,
    private readonly stage: Stage,
    private readonly inputShape: number[],
    private readonly outputShape: number[],
    private readonly lossFn: ((a: tf.Tensor, b: tf.Tensor) => tf.Tensor) | null,
    private readonly compileOptimizer: tf.Optimizer,
    spec: MessageOf<"load">["optimizer"],
    private readonly metrics: MetricSpec[],
    private readonly order: WeightOrder,
  ) {
    this.vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
    this.names = model.trainableWeights.map((w) => w.originalName);
    this.sizes = this.vars.map((v) => v.size);
    this.state = new ModelState(model);
    this.offsets = [];
    let off = 0;
    for (const v of this.vars) {
      this.offsets.push(off);
      off += v.size;
    }
    this.gradientLength = off;
    // The schedule arrives as data: this stage's actions, in order.
    this.actions = stage.actions;
    this.update = makeUpdateRule(this.vars, spec);
    this.last = stage.index === stage.count - 1;
  }

  static async load(msg: LoadOf<"stage">, weights: Tensorlike[], env: Pick<RoleEnv, "memoryCapBytes">): Promise<StageRuntime> {
    const memoryCapBytes = env.memoryCapBytes;
    const stage = msg.stage;
    const inputShape = [...stage.inputShape];
    const order = (m: tf.LayersModel) => stageWeightOrder(m, msg.topology, stage.from, stage.to);
    const model = await buildModel(stageTopology(msg.topology, stage.from, stage.to, inputShape, stage.index), weights, order);
    const summary = summarizeModel(model);
    if (memoryCapBytes !== null) {
      const c = stageCost(
        { layers: summary.layers, stages: stage.count, microBatchSize: stage.microBatchSize, optimizerSlots: optimizerSlots(msg.optimizer), inFlight: () => actionsInFlight(stage.actions), memoryBytes: () => Infinity },
        stage.index,
        0,
        summary.layers.length,
      );
      const need = c.stateBytes + c.activationBytes;
      if (need > memoryCapBytes) {
        model.dispose();
        throw new ModelError(
          `stage ${stage.index} (layers [${stage.from}, ${stage.to})) needs ${formatBytes(need)} (${formatBytes(c.stateBytes)} parameters, gradients and optimizer state; ${formatBytes(c.activationBytes)} activations for micro-batches of ${stage.microBatchSize}), above this worker's memory cap of ${formatBytes(memoryCapBytes)}`,
          { hint: "split the model over more stages or workers, use smaller micro-batches, or raise .memory()", details: { neededBytes: need, capBytes: memoryCapBytes } },
        );
      }
    }
    const optimizer = createOptimizer(msg.optimizer);
    const last = stage.index === stage.count - 1;
    const plain = last ? compiledLoss(model, msg.loss, optimizer) : null;
    const lossFn = plain && msg.classWeight ? classWeighted(plain, msg.classWeight) : plain;
    const outputShape = summary.outputShape.slice(1).map((d) => d ?? 1);
    return new StageRuntime(model, stage, inputShape, outputShape, lossFn, optimizer, msg.optimizer, msg.metrics ?? [], order);
  }

  get paramCount(): number {
    return this.model.countParams();
  }

  get loaded(): WorkerRole["loaded"] {
    return { paramCount: this.paramCount, gradientLength: this.gradientLength };
  }

  async step(msg: MessageOf<"step">, attachments: Tensorlike[], io: StageIO): Promise<StageStepResult> {
    transfers.reset();
    const run = await this.begin(msg, attachments, io);
    try {
      for (const a of this.actions) {
        // A short last batch can leave micro-batches empty; every stage knows the sizes and skips them.
        if (run.micro.sizes[a.micro]! === 0) continue;
        if (a.kind === "F") await this.forward(run, a.micro);
        else await this.backward(run, a.micro);
      }
      const sums = await run.sink.finish(run.acc, this.state.tensors());
      run.loss = sums.loss;
      this.metrics.forEach((m, i) => (run.metrics[m.name] = sums.metrics[i]!));
      run.stateNow = sums.stateNow;
    } finally {
      for (const t of run.saved.values()) t.dispose();
      run.sink.dispose();
      this.state.moved();
    }
    const computeEnd = performance.now();
    const n = this.gradientLength;
    const nonFinite = run.failure !== undefined ? undefined : run.inputNonFinite ? { where: "input" as const } : this.nonFiniteOf(run);
    const w0 = performance.now();
    const dropped = await agreeAcrossStages(io, { step: msg.step, microBatches: this.stage.microBatches, index: this.stage.index, count: this.stage.count }, run.failure !== undefined || nonFinite ? 1 : 0);
    const agreeMs = performance.now() - w0;
    if (dropped > 0) run.acc.fill(0);
    else this.state.writeChange(run.stateBefore, msg.weight, run.acc.subarray(n, n + this.state.length), run.stateNow);
    run.acc[run.acc.length - 1] = dropped > 0 ? 1 : 0;
    const reduced = await io.allReduce(run.acc);
    const a0 = performance.now();
    const skipped = reduced.data[reduced.data.length - 1] !== 0;
    if (skipped) this.state.set(run.stateBefore);
    else {
      this.update.apply(reduced.data.subarray(0, n), msg.learningRate);
      this.state.set(run.stateBefore, reduced.data.subarray(n, n + this.state.length));
    }
    const applyMs = performance.now() - a0;
    if (run.failure !== undefined) throw survivedStepError(run.failure, msg.step);
    return {
      loss: run.loss,
      startedAt: run.startedAt,
      computeMs: computeEnd - run.t0 - run.waitMs,
      commMs: reduced.stats.commMs,
      waitMs: run.waitMs + agreeMs + reduced.stats.waitMs,
      applyMs,
      ...(onDevice() ? { readbackMs: transfers.readbackMs, uploadMs: transfers.uploadMs } : {}),
      actions: run.timings,
      inFlightMax: run.inFlightMax,
      ...(nonFinite ? { nonFinite } : {}),
      ...(skipped ? { skipped } : {}),
      ...(this.last && this.metrics.length ? { metrics: run.metrics } : {}),
    };
  }

  /** Where this stage saw NaN or Infinity: its share of the loss (last stage), else its gradient. */
  private nonFiniteOf(run: StageRun): NonFinite | undefined {
    return nonFiniteIn(this.last ? run.loss : 0, run.acc.subarray(0, this.gradientLength), this.names, this.sizes);
  }

  /**
   * Runs `compute` unless the stage already failed this step; a failure is kept and `fallback`
   * (zeros of the right shape) stands in, so the schedule's messages all still flow.
   */
  private async attempt<T>(run: StageRun, compute: () => Promise<T>, fallback: () => T): Promise<T> {
    if (run.failure !== undefined) return fallback();
    try {
      return await compute();
    } catch (err) {
      run.failure = err;
      return fallback();
    }
  }

  /** Checks the step carries what this stage needs and starts its bookkeeping. */
  private async begin(msg: MessageOf<"step">, attachments: Tensorlike[], io: StageIO): Promise<StageRun> {
    const micro = msg.micro;
    if (!micro || micro.sizes.length !== this.stage.microBatches) {
      throw new ProtocolError(`step ${msg.step} for stage ${this.stage.index} needs ${this.stage.microBatches} micro-batch sizes`);
    }
    const first = this.stage.index === 0;
    // Stage 0 gets the micro-batches' inputs and the last stage their targets (both, with one stage).
    const xs = first ? attachments.slice(0, this.stage.microBatches) : [];
    const ys = this.last ? attachments.slice(first ? this.stage.microBatches : 0) : [];
    if ((first && xs.length !== this.stage.microBatches) || (this.last && ys.length !== this.stage.microBatches)) {
      throw new ProtocolError(`step ${msg.step} for stage ${this.stage.index} carries ${attachments.length} tensors`);
    }
    const acc = new Float32Array(this.gradientLength + this.state.length + 1);
    const t0 = performance.now();
    return {
      msg, micro, io, xs, ys, first, t0, acc,
      startedAt: wallClock(),
      stateBefore: await this.state.snapshot(),
      stateNow: new Float32Array(0),
      inputNonFinite: inputNonFinite(...xs, ...ys) !== undefined,
      saved: new Map(), timings: [], loss: 0, metrics: {}, waitMs: 0, inFlightMax: 0,
      sink: onDevice() ? deviceSink(this.metrics.length) : hostSink(acc, this.offsets, this.metrics.length),
    };
  }

  private async receive(run: StageRun, kind: "activation" | "gradient", m: number): Promise<Float32Array> {
    const w0 = performance.now();
    const data = await run.io.receive(kind, run.msg.step, m);
    run.waitMs += performance.now() - w0;
    return data;
  }

  /** F(m): runs the stage's layers on micro-batch m and sends the result on; keeps the input for B(m). */
  private async forward(run: StageRun, m: number): Promise<void> {
    const size = run.micro.sizes[m]!;
    const x = run.first ? tensorOf(run.xs[m]!) : tf.tensor(await this.receive(run, "activation", m), [size, ...this.inputShape]);
    const start = performance.now() - run.t0;
    if (!this.last) {
      const data = await this.attempt(
        run,
        async () => {
          seedDropout(this.model, run.msg.step, m);
          const out = tf.tidy(() => this.model.apply(x, { training: true }) as tf.Tensor);
          try {
            return await copyOut(out);
          } finally {
            out.dispose();
          }
        },
        () => new Float32Array(size * this.outputShape.reduce((a, b) => a * b, 1)),
      );
      run.io.send("next", "activation", run.msg.step, m, data);
    }
    run.saved.set(m, x);
    run.inFlightMax = Math.max(run.inFlightMax, run.saved.size);
    run.timings.push({ kind: "F", micro: m, start, end: performance.now() - run.t0 });
  }

  /**
   * B(m): recomputes the forward pass with autograd, starts from the gradient arriving from the
   * next stage (the last stage from its share of the loss), accumulates the layers' gradients
   * and sends the input's gradient back.
   */
  private async backward(run: StageRun, m: number): Promise<void> {
    const size = run.micro.sizes[m]!;
    const x = run.saved.get(m);
    if (!x) throw new ProtocolError(`stage ${this.stage.index} runs B${m} before F${m}`);
    const dy = this.last ? null : tf.tensor(await this.receive(run, "gradient", m), [size, ...this.outputShape]);
    const y = this.last ? labelTensor(run.ys[m]!) : null;
    const start = performance.now() - run.t0;
    const weight = run.micro.weights[m]!;
    const inputGrad = await this.attempt(
      run,
      () => this.gradients(run, m, x, dy, y, weight),
      () => (run.first ? null : new Float32Array(size * this.inputShape.reduce((a, b) => a * b, 1))),
    );
    if (!run.first) run.io.send("prev", "gradient", run.msg.step, m, inputGrad!);
    tf.dispose([x, ...(dy ? [dy] : []), ...(y ? [y] : [])]);
    run.saved.delete(m);
    run.timings.push({ kind: "B", micro: m, start, end: performance.now() - run.t0 });
  }

  /**
   * Recomputes micro-batch m's forward pass under autograd and hands its gradients to the step's
   * sink; returns the input's gradient (null on stage 0). The recomputation must not move the
   * layers' state a second time (the forward pass did), so a stage before the last puts its
   * state back after (from copies kept where the state lives).
   */
  private async gradients(run: StageRun, m: number, x: tf.Tensor, dy: tf.Tensor | null, y: tf.Tensor | null, weight: number): Promise<Float32Array | null> {
    const kept = !this.last && this.state.length > 0 ? this.state.tensors().map((t) => t.clone()) : null;
    seedDropout(this.model, run.msg.step, m);
    const wrt: tf.Tensor[] = run.first ? [...this.vars] : [x, ...this.vars];
    let loss: tf.Scalar | null = null;
    let metrics: tf.Scalar[] = [];
    const { value, grads } = tf.engine().gradients(
      () =>
        tf.tidy(() => {
          const out = this.model.apply(x, { training: true }) as tf.Tensor;
          // This stage's share of the loss: the last stage's data loss, and every stage's regularizers
          // (the driver sums the stages' shares, so the step's loss is model.fit's, regularizers included).
          let share: tf.Scalar | null = null;
          if (this.last) {
            share = tf.mul(tf.mean(this.lossFn!(y!, out)), weight) as tf.Scalar;
            metrics = metricScalars(this.metrics, y!, out).map((s) => tf.keep(tf.mul(s, weight) as tf.Scalar));
          }
          for (const reg of this.model.calculateLosses()) share = tf.add(share ?? tf.scalar(0), tf.mul(reg, weight)) as tf.Scalar;
          if (share) loss = tf.keep(share);
          const upstream = this.last ? tf.scalar(0) : tf.sum(tf.mul(out, dy!));
          return share ? tf.add(upstream, share) : upstream;
        }),
      wrt,
    );
    try {
      if (kept) this.state.restore(kept);
      run.sink.add(run.first ? grads : grads.slice(1), loss, metrics);
      return run.first ? null : await copyOut(grads[0]!);
    } finally {
      tf.dispose([value, ...grads, ...(loss ? [loss] : []), ...metrics, ...(kept ?? [])]);
    }
  }

  async weights(): Promise<{ tensors: Tensorlike[] }> {
    return { tensors: await readWeights(this.model, this.order) };
  }

  exportState(): Promise<OptimizerState> {
    return this.update.exportState();
  }

  importState(state: OptimizerState): Promise<void> {
    return this.update.importState(state);
  }

  dispose(): void {
    this.model.dispose();
    this.update.dispose();
    this.compileOptimizer.dispose();
  }
}
