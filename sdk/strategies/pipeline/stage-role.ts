import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "../../backends/native/addon";
import { NativeBackend } from "../../backends/native/backend";
import { ModelError, ProtocolError } from "../../errors/errors";
import { formatBytes, optimizerSlots } from "../../plan/memory";
import { summarizeModel } from "../../plan/model-summary";
import { stageCost } from "../../plan/partition";
import { actionsInFlight, type Action } from "../../plan/schedules";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { buildModel, compiledLoss, createOptimizer, readWeights, tensorOf } from "../../worker/model-io";
import type { HostIO, RoleEnv, StepTimes, WorkerRole } from "../../worker/role";
import { makeUpdateRule } from "../../worker/update-rules";
import type { OptimizerState, UpdateRule } from "../../worker/update-rule";
import { seedDropout, stageTopology } from "./stage-model";

/** How a stage reaches its neighbours and its replicas (the worker's host provides these). */
export type StageIO = Pick<HostIO, "receive" | "send" | "allReduce">;

export interface StageStepResult extends StepTimes {
  /** When each forward (F) and backward (B) of a micro-batch ran, in ms from the step's start. */
  actions: Array<{ kind: "F" | "B"; micro: number; start: number; end: number }>;
  inFlightMax: number;
}

type Stage = NonNullable<MessageOf<"load">["stage"]>;

/** One step's bookkeeping on a stage, from its first action to its update. */
interface StageRun {
  msg: MessageOf<"step">;
  micro: NonNullable<MessageOf<"step">["micro"]>;
  io: StageIO;
  xs: Tensorlike[];
  ys: Tensorlike[];
  first: boolean;
  t0: number;
  startedAt: number;
  /** The accumulated gradient of the stage's variables, laid out flat. */
  acc: Float32Array;
  /** Inputs of micro-batches whose forward ran and whose backward has not. */
  saved: Map<number, tf.Tensor>;
  timings: StageStepResult["actions"];
  loss: number;
  waitMs: number;
  inFlightMax: number;
  add: (acc: Float32Array, g: tf.Tensor, offset: number) => void;
}


function copyOut(t: tf.Tensor): Float32Array {
  const b = tf.backend();
  return Float32Array.from(b instanceof NativeBackend ? b.values(t) : (t.dataSync() as Float32Array));
}

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

  private constructor(
    readonly model: tf.LayersModel,
    private readonly stage: Stage,
    private readonly inputShape: number[],
    private readonly outputShape: number[],
    private readonly lossFn: ((a: tf.Tensor, b: tf.Tensor) => tf.Tensor) | null,
    private readonly compileOptimizer: tf.Optimizer,
    spec: MessageOf<"load">["optimizer"],
  ) {
    this.vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
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

  static async load(msg: MessageOf<"load">, weights: Tensorlike[], env: Pick<RoleEnv, "memoryCapBytes">): Promise<StageRuntime> {
    const memoryCapBytes = env.memoryCapBytes;
    const stage = msg.stage!;
    const inputShape = [...(msg.stageInputShape ?? [])];
    const model = await buildModel(stageTopology(msg.topology, stage.from, stage.to, inputShape, stage.index), weights);
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
    const lossFn = last ? compiledLoss(model, msg.loss, optimizer) : null;
    const outputShape = summary.outputShape.slice(1).map((d) => d ?? 1);
    return new StageRuntime(model, stage, inputShape, outputShape, lossFn, optimizer, msg.optimizer);
  }

  get paramCount(): number {
    return this.model.countParams();
  }

  get loaded(): WorkerRole["loaded"] {
    return { paramCount: this.paramCount, gradientLength: this.gradientLength };
  }

  async step(msg: MessageOf<"step">, attachments: Tensorlike[], io: StageIO): Promise<StageStepResult> {
    const run = this.begin(msg, attachments, io);
    try {
      for (const a of this.actions) {
        // A short last batch can leave micro-batches empty; every stage knows the sizes and skips them.
        if (run.micro.sizes[a.micro]! === 0) continue;
        if (a.kind === "F") await this.forward(run, a.micro);
        else await this.backward(run, a.micro);
      }
    } finally {
      for (const t of run.saved.values()) t.dispose();
    }
    const computeEnd = performance.now();
    const reduced = await io.allReduce(run.acc);
    const a0 = performance.now();
    this.update.apply(reduced.data);
    const applyMs = performance.now() - a0;
    return {
      loss: run.loss,
      startedAt: run.startedAt,
      computeMs: computeEnd - run.t0 - run.waitMs,
      commMs: reduced.stats.commMs,
      waitMs: run.waitMs + reduced.stats.waitMs,
      applyMs,
      actions: run.timings,
      inFlightMax: run.inFlightMax,
    };
  }

  /** Checks the step carries what this stage needs and starts its bookkeeping. */
  private begin(msg: MessageOf<"step">, attachments: Tensorlike[], io: StageIO): StageRun {
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
    return { msg, micro, io, xs, ys, first, t0: performance.now(), startedAt: wallClock(), acc: new Float32Array(this.gradientLength), saved: new Map(), timings: [], loss: 0, waitMs: 0, inFlightMax: 0, add: accumulator() };
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
      seedDropout(this.model, run.msg.step, m);
      const out = tf.tidy(() => this.model.apply(x, { training: true }) as tf.Tensor);
      run.io.send("next", "activation", run.msg.step, m, copyOut(out));
      out.dispose();
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
    const y = this.last ? tensorOf(run.ys[m]!) : null;
    const start = performance.now() - run.t0;
    const weight = run.micro.weights[m]!;
    seedDropout(this.model, run.msg.step, m);
    const wrt: tf.Tensor[] = run.first ? [...this.vars] : [x, ...this.vars];
    let microLoss = 0;
    const { value, grads } = tf.engine().gradients(
      () =>
        tf.tidy(() => {
          const out = this.model.apply(x, { training: true }) as tf.Tensor;
          let objective: tf.Scalar;
          if (this.last) {
            const mean = tf.mean(this.lossFn!(y!, out)) as tf.Scalar;
            microLoss = mean.dataSync()[0]!;
            objective = tf.mul(mean, weight);
          } else {
            objective = tf.sum(tf.mul(out, dy!));
          }
          for (const reg of this.model.calculateLosses()) objective = tf.add(objective, tf.mul(reg, weight));
          return objective;
        }),
      wrt,
    );
    run.loss += weight * microLoss;
    const varGrads = run.first ? grads : grads.slice(1);
    varGrads.forEach((g, i) => run.add(run.acc, g, this.offsets[i]!));
    if (!run.first) run.io.send("prev", "gradient", run.msg.step, m, copyOut(grads[0]!));
    tf.dispose([value, ...grads]);
    tf.dispose([x, ...(dy ? [dy] : []), ...(y ? [y] : [])]);
    run.saved.delete(m);
    run.timings.push({ kind: "B", micro: m, start, end: performance.now() - run.t0 });
  }

  weights(): { tensors: Tensorlike[] } {
    return { tensors: readWeights(this.model) };
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

/** acc[offset ..] += g: natively from the tensor's memory where possible. */
function accumulator(): (acc: Float32Array, g: tf.Tensor, offset: number) => void {
  const load = loadAddon();
  return (acc, g, offset) => {
    const b = tf.backend();
    const values = b instanceof NativeBackend ? b.values(g) : (g.dataSync() as Float32Array);
    if (load.ok) load.addon.accumulate(acc, values, offset);
    else for (let i = 0; i < values.length; i++) acc[offset + i]! += values[i]!;
  };
}
