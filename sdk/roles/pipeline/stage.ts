import type { LoadOf } from "../../protocol/messages";
import * as tf from "@tensorflow/tfjs";
import { ProtocolError } from "../../errors/errors";
import type { Action } from "../../plan/schedules";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { buildModel, readWeights, tensorOf, type WeightOrder } from "../../model/model-io";
import type { HostIO, RoleEnv, RoleReply, StepTimes, WorkerRole } from "../role";
import type { Message } from "../../protocol/messages";
import { evaluateStage } from "./stage-evaluate";
import { makeUpdateRule } from "../../compute/update-rule";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";
import { seedDropout, stageTopology, stageWeightOrder } from "./stage-model";
import { inputNonFinite, labelTensor, nonFiniteIn, survivedStepError, type NonFinite } from "../../compute/step-health";
import { ModelState } from "../../compute/model-state";
import { onDevice, transfers } from "../../compute/device-io";
import { agreeAcrossStages } from "./stage-agreement";
import { copyOut, deviceSink, hostSink, type ActionTimings, type StageIO, type StageRun } from "./stage-run";
import { createOptimizer } from "../../model/optimizers";
import { objectiveLoss, outputList, reported, reportedNames, stageObjective, type Objective } from "../../compute/objective";
import { checkStageMemory } from "./stage-memory";


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
 * stage's layers on micro-batch m (the activation from the stage before, and the model inputs
 * its layers read, which the driver sends) and sends its activation on; B(m) recomputes the
 * forward pass with TF.js's autograd, takes the gradient arriving from the next stage plus its
 * share of the loss (of the model outputs its layers make: the last stage's, or any stage's in a
 * model with several outputs), accumulates the layers' gradients, and sends the activation's
 * gradient back. After the last action the accumulated gradients are summed with the stage's
 * replicas and one optimizer update is applied.
 */
export class StageRuntime implements WorkerRole {
  private readonly vars: tf.Variable[];
  private readonly offsets: number[];
  readonly gradientLength: number;
  private readonly actions: readonly Action[];
  private readonly update: UpdateRule;
  /** It receives an activation from the stage before (every stage but the first), and passes one on (every stage but the last). */
  private readonly receives: boolean;
  private readonly passes: boolean;
  private readonly state: ModelState;
  private readonly names: string[];
  private readonly sizes: number[];

  private constructor(
    readonly model: tf.LayersModel,
    private readonly stage: Stage,
    private readonly inputShape: number[],
    private readonly outputShape: number[],
    /** The losses and metrics of the model outputs this stage makes; null where it makes none. */
    private readonly objective: Objective | null,
    private readonly compileOptimizer: tf.Optimizer,
    spec: MessageOf<"load">["optimizer"],
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
    this.receives = stage.index > 0;
    this.passes = stage.index < stage.count - 1;
  }

  static async load(msg: LoadOf<"stage">, weights: Tensorlike[], env: Pick<RoleEnv, "memoryCapBytes">): Promise<StageRuntime> {
    const stage = msg.stage;
    const inputShape = [...stage.inputShape];
    const order = (m: tf.LayersModel) => stageWeightOrder(m, msg.topology, stage.from, stage.to);
    const model = await buildModel(stageTopology(msg.topology, stage.from, stage.to, inputShape, stage.index), weights, order);
    checkStageMemory(model, msg, env.memoryCapBytes);
    const optimizer = createOptimizer(msg.optimizer);
    const passes = stage.index < stage.count - 1;
    const objective = stageObjective(model, msg, stage.heads, passes, optimizer);
    const outputShape = passes ? model.outputs[0]!.shape.slice(1).map((d) => d ?? 1) : [];
    return new StageRuntime(model, stage, inputShape, outputShape, objective, optimizer, msg.optimizer, order);
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
      this.reportedNames.forEach((name, i) => (run.metrics[name] = sums.metrics[i]!));
      run.stateNow = sums.stateNow;
    } finally {
      for (const t of run.saved.values()) tf.dispose(t);
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
      ...(this.reportedNames.length ? { metrics: run.metrics } : {}),
    };
  }

  /** What the stage reports beside its share of the loss: its outputs' metrics (and, with several outputs, their losses). */
  private get reportedNames(): string[] {
    return this.objective ? reportedNames(this.objective) : [];
  }

  /** Where this stage saw NaN or Infinity: its share of the loss (where it makes outputs), else its gradient. */
  private nonFiniteOf(run: StageRun): NonFinite | undefined {
    return nonFiniteIn(this.objective ? run.loss : 0, run.acc.subarray(0, this.gradientLength), this.names, this.sizes);
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
    // Per micro-batch, in the load's order: each model input the stage reads, then the targets of each output it makes.
    const M = this.stage.microBatches;
    const { feeds, heads } = this.stage;
    if (attachments.length !== (feeds.length + heads.length) * M) {
      throw new ProtocolError(`step ${msg.step} for stage ${this.stage.index} carries ${attachments.length} tensors; it takes ${feeds.length} input(s) and ${heads.length} target(s) for each of ${M} micro-batches`);
    }
    const xs = feeds.map((_, f) => attachments.slice(f * M, (f + 1) * M));
    const ys = heads.map((_, h) => attachments.slice((feeds.length + h) * M, (feeds.length + h + 1) * M));
    const acc = new Float32Array(this.gradientLength + this.state.length + 1);
    const t0 = performance.now();
    return {
      msg, micro, io, xs, ys, first: !this.receives, t0, acc,
      startedAt: wallClock(),
      stateBefore: await this.state.snapshot(),
      stateNow: new Float32Array(0),
      inputNonFinite: inputNonFinite(...xs.flat(), ...ys.flat()) !== undefined,
      saved: new Map(), timings: [], loss: 0, metrics: {}, waitMs: 0, inFlightMax: 0,
      sink: onDevice() ? deviceSink(this.reportedNames.length) : hostSink(acc, this.offsets, this.reportedNames.length),
    };
  }

  private async receive(run: StageRun, kind: "activation" | "gradient", m: number): Promise<Float32Array> {
    const w0 = performance.now();
    const data = await run.io.receive(kind, run.msg.step, m);
    run.waitMs += performance.now() - w0;
    return data;
  }

  /** F(m): runs the stage's layers on micro-batch m and sends the activation on; keeps the inputs for B(m). */
  private async forward(run: StageRun, m: number): Promise<void> {
    const size = run.micro.sizes[m]!;
    const inputs = [...(this.receives ? [tf.tensor(await this.receive(run, "activation", m), [size, ...this.inputShape])] : []), ...run.xs.map((f) => tensorOf(f[m]!))];
    const start = performance.now() - run.t0;
    if (this.passes) {
      const data = await this.attempt(
        run,
        async () => {
          seedDropout(this.model, run.msg.step, m);
          const outs = tf.tidy(() => outputList(this.model.apply(inputs.length === 1 ? inputs[0]! : inputs, { training: true }) as tf.Tensor | tf.Tensor[]));
          try {
            return await copyOut(outs[0]!);
          } finally {
            tf.dispose(outs);
          }
        },
        () => new Float32Array(size * this.outputShape.reduce((a, b) => a * b, 1)),
      );
      run.io.send("next", "activation", run.msg.step, m, data);
    }
    run.saved.set(m, inputs);
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
    const inputs = run.saved.get(m);
    if (!inputs) throw new ProtocolError(`stage ${this.stage.index} runs B${m} before F${m}`);
    const dy = this.passes ? tf.tensor(await this.receive(run, "gradient", m), [size, ...this.outputShape]) : null;
    const ys = run.ys.map((h) => labelTensor(h[m]!));
    const start = performance.now() - run.t0;
    const weight = run.micro.weights[m]!;
    const inputGrad = await this.attempt(
      run,
      () => this.gradients(run, m, inputs, dy, ys, weight),
      () => (this.receives ? new Float32Array(size * this.inputShape.reduce((a, b) => a * b, 1)) : null),
    );
    if (this.receives) run.io.send("prev", "gradient", run.msg.step, m, inputGrad!);
    tf.dispose([...inputs, ...(dy ? [dy] : []), ...ys]);
    run.saved.delete(m);
    run.timings.push({ kind: "B", micro: m, start, end: performance.now() - run.t0 });
  }

  /**
   * Recomputes micro-batch m's forward pass under autograd and hands its gradients to the step's
   * sink; returns the received activation's gradient (null on stage 0). The recomputation must
   * not move the layers' state a second time (the forward pass did), so a stage that passes an
   * activation on puts its state back after (from copies kept where the state lives).
   */
  private async gradients(run: StageRun, m: number, inputs: tf.Tensor[], dy: tf.Tensor | null, ys: tf.Tensor[], weight: number): Promise<Float32Array | null> {
    const kept = this.passes && this.state.length > 0 ? this.state.tensors().map((t) => t.clone()) : null;
    seedDropout(this.model, run.msg.step, m);
    const wrt: tf.Tensor[] = this.receives ? [inputs[0]!, ...this.vars] : [...this.vars];
    let loss: tf.Scalar | null = null;
    let metrics: tf.Scalar[] = [];
    const { value, grads } = tf.engine().gradients(
      () =>
        tf.tidy(() => {
          const outs = outputList(this.model.apply(inputs.length === 1 ? inputs[0]! : inputs, { training: true }) as tf.Tensor | tf.Tensor[]);
          const made = this.passes ? outs.slice(1) : outs;
          // This stage's share of the loss: its outputs' losses, and every stage's regularizers
          // (the driver sums the stages' shares, so the step's loss is model.fit's, regularizers included).
          let share: tf.Scalar | null = null;
          if (this.objective) {
            const l = objectiveLoss(this.objective, ys, made);
            share = tf.mul(l.total, weight) as tf.Scalar;
            metrics = reported(this.objective, ys, made, l.each).map((s) => tf.keep(tf.mul(s, weight) as tf.Scalar));
          }
          for (const reg of this.model.calculateLosses()) share = tf.add(share ?? tf.scalar(0), tf.mul(reg, weight)) as tf.Scalar;
          if (share) loss = tf.keep(share);
          const upstream = this.passes ? tf.sum(tf.mul(outs[0]!, dy!)) : tf.scalar(0);
          return share ? tf.add(upstream, share) : upstream;
        }),
      wrt,
    );
    try {
      if (kept) this.state.restore(kept);
      run.sink.add(this.receives ? grads.slice(1) : grads, loss, metrics);
      return this.receives ? await copyOut(grads[0]!) : null;
    } finally {
      tf.dispose([value, ...grads, ...(loss ? [loss] : []), ...metrics, ...(kept ?? [])]);
    }
  }

  /** Validation at an epoch's end: this stage's part of the forward pass over a shard (see evaluateStage). */
  answer(msg: Message, attachments: Tensorlike[] = [], io?: HostIO): Promise<RoleReply> | undefined {
    if (msg.type !== "evaluate") return undefined;
    if (!io) return Promise.reject(new ProtocolError(`stage ${this.stage.index} evaluates only with its links to its neighbours`));
    const st = { model: this.model, objective: this.objective, index: this.stage.index, receives: this.receives, passes: this.passes, inputShape: this.inputShape, feeds: this.stage.feeds.length, heads: this.stage.heads.length };
    return evaluateStage(st, msg, attachments, io).then((sums) => ({ draft: { type: "evaluated", re: msg.id, ...sums } }));
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
