import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "../../backends/native/addon";
import { NativeBackend } from "../../backends/native/backend";
import type { AllReduceStats } from "../../collectives/ring-allreduce";
import { DataError, ModelError } from "../../errors/errors";
import { estimateReplicaMemory, formatBytes } from "../../plan/memory";
import { summarizeModel } from "../../plan/model-summary";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../transport/channel";
import { wallClock } from "../../util/clock";
import { buildModel, compiledLoss, createOptimizer, readWeights } from "../../worker/model-io";
import { makeUpdateRule } from "../../worker/update-rules";
import type { UpdateRule } from "../../worker/update-rule";

/**
 * A tensor's values for an immediate copy. On the native backend this reads the backing array
 * without marking it handed-out, so its memory can be recycled for the next step.
 */
function readValues(t: tf.Tensor): Float32Array {
  const b = tf.backend();
  return b instanceof NativeBackend ? b.values(t) : (t.dataSync() as Float32Array);
}

/** x *= alpha, with the native kernel where it was built (a gradient can hold millions of values). */
function scaleInPlace(x: Float32Array, alpha: number): void {
  const load = loadAddon();
  if (load.ok) load.addon.scale(x, alpha);
  else for (let i = 0; i < x.length; i++) x[i]! *= alpha;
}

export type AllReduceFn = (data: Float32Array) => Promise<{ data: Float32Array; stats: AllReduceStats }>;

export interface StepResult {
  loss: number;
  startedAt: number;
  computeMs: number;
  commMs: number;
  waitMs: number;
  applyMs: number;
}

/**
 * One replica of synchronous data parallelism: computes the gradient of its slice, scales it
 * by the slice's share of the global batch, sums it with every other replica's by all-reduce,
 * and applies the same update as every other replica.
 */
export class DataReplica {
  private readonly vars: tf.Variable[];
  private readonly sizes: number[];
  private readonly update: UpdateRule;
  readonly gradientLength: number;

  private constructor(
    readonly model: tf.LayersModel,
    private readonly compileOptimizer: tf.Optimizer,
    private readonly lossFn: (a: tf.Tensor, b: tf.Tensor) => tf.Tensor,
    spec: MessageOf<"load">["optimizer"],
  ) {
    this.vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
    this.sizes = this.vars.map((v) => v.size);
    this.gradientLength = this.sizes.reduce((a, b) => a + b, 0);
    this.update = makeUpdateRule(this.vars, spec);
  }

  static async load(msg: MessageOf<"load">, weights: Tensorlike[], memoryCapBytes: number | null = null): Promise<DataReplica> {
    const model = await buildModel(msg.topology, weights);
    if (memoryCapBytes !== null) {
      const e = estimateReplicaMemory(summarizeModel(model), { batchSize: msg.replicaBatch, optimizer: msg.optimizer });
      const need = e.paramsBytes + e.gradientBytes + (e.optimizerBytes ?? 0) + (e.activationBytes ?? 0);
      if (need > memoryCapBytes) {
        model.dispose();
        throw new ModelError(
          `the whole model needs ${formatBytes(need)} per replica (${formatBytes(e.paramsBytes)} parameters, ${formatBytes(e.gradientBytes)} gradients, ${formatBytes(e.optimizerBytes ?? 0)} optimizer state, ${formatBytes(e.activationBytes ?? 0)} activations for ${msg.replicaBatch ?? "?"} samples), above this worker's memory cap of ${formatBytes(memoryCapBytes)}`,
          { hint: 'split it over several workers: strategy("pipeline"), strategy("hybrid", { stages }) or strategy("auto")', details: { neededBytes: need, capBytes: memoryCapBytes } },
        );
      }
    }
    // model.compile wants an optimizer; the update itself is the UpdateRule's.
    const optimizer = createOptimizer(msg.optimizer);
    return new DataReplica(model, optimizer, compiledLoss(model, msg.loss, optimizer), msg.optimizer);
  }

  get paramCount(): number {
    return this.model.countParams();
  }

  async step(weight: number, x: Tensorlike, y: Tensorlike, allReduce: AllReduceFn): Promise<StepResult> {
    const t0 = performance.now();
    const startedAt = wallClock();
    const flat = new Float32Array(this.gradientLength);
    let loss = 0;
    if (x.shape[0]! > 0) loss = this.localGradient(x, y, weight, flat);
    const t1 = performance.now();
    const reduced = await allReduce(flat);
    const t2 = performance.now();
    this.apply(reduced.data);
    const t3 = performance.now();
    return { loss, startedAt, computeMs: t1 - t0, commMs: reduced.stats.commMs, waitMs: reduced.stats.waitMs, applyMs: t3 - t2 };
  }

  /** Writes weight x grad(mean loss over the slice + regularizers) into `flat`; returns the slice's mean loss. */
  private localGradient(x: Tensorlike, y: Tensorlike, weight: number, flat: Float32Array): number {
    const xs = tf.tensor(x.data, [...x.shape], x.data instanceof Int32Array ? "int32" : "float32");
    const ys = tf.tensor(y.data, [...y.shape], y.data instanceof Int32Array ? "int32" : "float32");
    let dataLoss = 0;
    try {
      const { value, grads } = tf.variableGrads(() => {
        const out = this.model.apply(xs, { training: true }) as tf.Tensor;
        const perSample = tf.mean(this.lossFn(ys, out)) as tf.Scalar;
        dataLoss = perSample.dataSync()[0]!;
        let total: tf.Scalar = perSample;
        for (const reg of this.model.calculateLosses()) total = tf.add(total, reg);
        return total;
      }, this.vars);
      let off = 0;
      this.vars.forEach((v, i) => {
        const g = grads[v.name];
        if (!g) throw new DataError(`no gradient for ${v.name}`);
        flat.set(readValues(g), off);
        off += this.sizes[i]!;
      });
      value.dispose();
      tf.dispose(Object.values(grads));
    } catch (err) {
      const msg = (err as Error).message;
      if (/shape|rank|compatible/i.test(msg)) {
        throw new DataError(`a batch of x [${x.shape.join(", ")}] and y [${y.shape.join(", ")}] does not fit the model: ${msg.split("\n")[0]}`, {
          hint: "check that the dataset's sample shapes match the model's input and output shapes",
        });
      }
      throw err;
    } finally {
      xs.dispose();
      ys.dispose();
    }
    if (weight !== 1) scaleInPlace(flat, weight);
    return dataLoss;
  }

  private apply(summed: Float32Array): void {
    this.update.apply(summed);
  }

  weights(): Tensorlike[] {
    return readWeights(this.model);
  }

  dispose(): void {
    this.model.dispose();
    this.update.dispose();
    this.compileOptimizer.dispose();
  }
}
