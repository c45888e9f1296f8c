import type { AllReduceStats } from "../../collectives/ring-allreduce";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../transport/channel";
import { wallClock } from "../../util/clock";
import { readWeights } from "../../worker/model-io";
import { loadReplica, sliceGradient, slowDown, type LoadedReplica } from "../../worker/slice-gradient";
import { makeUpdateRule } from "../../worker/update-rules";
import type { OptimizerState, UpdateRule } from "../../worker/update-rule";

export type AllReduceFn = (data: Float32Array) => Promise<{ data: Float32Array; stats: AllReduceStats }>;

export interface StepResult {
  loss: number;
  startedAt: number;
  computeMs: number;
  commMs: number;
  waitMs: number;
  applyMs: number;
  /** Time spent waiting on purpose (a slowdown), part of computeMs. */
  slowdownMs: number;
}

/**
 * One replica of synchronous data parallelism: computes the gradient of its slice, scales it
 * by the slice's share of the global batch, sums it with every other replica's by all-reduce,
 * and applies the same update as every other replica.
 */
export class DataReplica {
  private readonly update: UpdateRule;

  private constructor(private readonly r: LoadedReplica, spec: MessageOf<"load">["optimizer"], private readonly slowdown: number) {
    this.update = makeUpdateRule(r.vars, spec);
  }

  static async load(msg: MessageOf<"load">, weights: Tensorlike[], memoryCapBytes: number | null = null): Promise<DataReplica> {
    return new DataReplica(await loadReplica(msg, weights, memoryCapBytes), msg.optimizer, msg.slowdown ?? 1);
  }

  get gradientLength(): number {
    return this.r.gradientLength;
  }

  get paramCount(): number {
    return this.r.model.countParams();
  }

  async step(weight: number, x: Tensorlike, y: Tensorlike, allReduce: AllReduceFn): Promise<StepResult> {
    const t0 = performance.now();
    const startedAt = wallClock();
    const flat = new Float32Array(this.r.gradientLength);
    let loss = 0;
    if (x.shape[0]! > 0) loss = sliceGradient(this.r, x, y, weight, flat);
    const slowdownMs = await slowDown(this.slowdown, performance.now() - t0);
    const t1 = performance.now();
    const reduced = await allReduce(flat);
    const t2 = performance.now();
    this.update.apply(reduced.data);
    const t3 = performance.now();
    return { loss, startedAt, computeMs: t1 - t0, commMs: reduced.stats.commMs, waitMs: reduced.stats.waitMs, applyMs: t3 - t2, slowdownMs };
  }

  weights(): Tensorlike[] {
    return readWeights(this.r.model);
  }

  exportState(): Promise<OptimizerState> {
    return this.update.exportState();
  }

  importState(state: OptimizerState): Promise<void> {
    return this.update.importState(state);
  }

  dispose(): void {
    this.r.model.dispose();
    this.update.dispose();
    this.r.compileOptimizer.dispose();
  }
}
