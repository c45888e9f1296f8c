import type { AllReduceStats } from "../../../collectives/ring-allreduce";
import { onDevice, transfers } from "../../../compute/device-io";
import { slowReport } from "../../../compute/loaded-replica";
import { slowDown, type SliceOutcome } from "../../../compute/slice-gradient";
import { survivedStepError, type NonFinite } from "../../../compute/step-health";
import type { OptimizerState, UpdateRule } from "../../../compute/tfjs-update";
import type { MessageOf } from "../../../protocol/messages";
import { wallClock } from "../../../util/clock";
import type { HostIO } from "../../role";
import type { GradientBuckets } from "../buckets";
import { StepBack } from "../step-back";
import type { StepResult } from "../step-result";
import type { ReplicaParts, StepInput } from "./gradient-sum";
import { WholeModelSum } from "./whole-model-sum";

/** A step's summed buffer, how long the sum took, and where a 16-bit sum overflowed. */
export interface Summed {
  data: Float32Array;
  stats: AllReduceStats;
  overflow?: NonFinite | undefined;
}

/**
 * A synchronous step (DDP's): the slice's gradient, weighted by its share of the global batch,
 * summed with every other replica's in [gradient | change of state | flag], then the update
 * every replica applies alike. The flag counts replicas whose slice held NaN or Infinity or
 * whose computation threw: when it is not zero, every replica drops the update alike, so the
 * replicas never differ. The moving statistics (BatchNormalization's) end the step at the
 * replicas' weighted mean, as Keras' MirroredStrategy leaves them. How the buffer is summed and
 * the update applied is the kind's (one all-reduce, or ZeRO-1's shard).
 */
export abstract class SummedStep extends WholeModelSum {
  /** Steps taken since the load, and (elastic) the state before the last, to step back to. */
  protected readonly back: StepBack;

  constructor(
    p: ReplicaParts,
    protected readonly update: UpdateRule,
    keepBack: boolean,
  ) {
    super(p);
    this.back = new StepBack(p.r, update, keepBack);
  }

  /** Buckets that start summing while the backward pass runs, where the kind can (else null). */
  protected abstract buckets(flat: Float32Array, io: HostIO, s: StepInput): GradientBuckets | null;
  /** The step's buffer summed with every replica's (it may move to the communication thread). */
  protected abstract sum(
    flat: Float32Array,
    slice: SliceOutcome,
    buckets: GradientBuckets | null,
    io: HostIO,
  ): Promise<Summed>;
  /** The summed gradient through the optimizer; returns the ms of it that were communication. */
  protected abstract applySum(gradient: Float32Array, learningRate: number | undefined): Promise<number>;
  /** The buffer the next step fills: the sum's (or its all-gather's), ours again. */
  protected abstract reuse(summed: Float32Array): Float32Array;

  // long: one step's phases in order, each timed: slice, sum, update, and the report that names them
  async step(s: StepInput, io: HostIO): Promise<StepResult> {
    const { r, hook } = this.p;
    const t0 = performance.now();
    const startedAt = wallClock();
    const n = r.gradientLength;
    const flat = this.p.buffer.take(n + r.state.length + 1);
    transfers.reset();
    const stateBefore = await r.state.snapshot();
    const buckets = this.buckets(flat, io, s);
    const slice = await this.p.slice.fill(
      s.weight,
      s.x,
      s.y,
      flat,
      stateBefore,
      buckets,
      (d, w) => io.allReduce(d, w),
      s.step,
    );
    if (!buckets && flat[flat.length - 1] === 0) hook.round(flat.subarray(0, n), 0);
    const slowdownMs = await slowDown(this.p.load.slowdown ?? 1, performance.now() - t0);
    const t1 = performance.now();
    let summed: Summed;
    try {
      summed = await this.sum(flat, slice, buckets, io);
    } catch (err) {
      // The forward pass moved the statistics; a step that never completed must leave none behind
      // (an elastic survivor retries the step from here).
      r.state.set(stateBefore);
      throw err;
    }
    const t2 = performance.now();
    const skipped = summed.data[summed.data.length - 1] !== 0 || summed.overflow !== undefined;
    hook.settled(!skipped);
    await this.back.taking(stateBefore);
    // The statistics first: a sharded step's all-gather may move the buffer to the communication thread.
    r.state.set(stateBefore, skipped ? undefined : summed.data.subarray(n, summed.data.length - 1));
    const gatherMs = skipped ? 0 : await this.applySum(summed.data.subarray(0, n), s.learningRate);
    this.p.buffer.give(this.reuse(summed.data));
    const t3 = performance.now();
    if (slice.failure !== undefined) throw survivedStepError(slice.failure, s.step);
    const nonFinite = slice.nonFinite ?? summed.overflow;
    const report: StepResult = {
      loss: slice.loss,
      startedAt,
      computeMs: t1 - t0,
      commMs: summed.stats.commMs,
      waitMs: summed.stats.waitMs,
      applyMs: t3 - t2 - gatherMs,
      slowdownMs,
      sentBytes: summed.stats.bytesSent,
    };
    // Set one by one, not spread: spreads of per-step objects left them in V8's old generation (see native-step.ts).
    if (onDevice()) Object.assign(report, { readbackMs: transfers.readbackMs, uploadMs: transfers.uploadMs });
    if (slice.metrics) report.metrics = slice.metrics;
    Object.assign(report, slowReport(r));
    if (nonFinite) report.nonFinite = nonFinite;
    if (skipped) report.skipped = skipped;
    if (buckets) report.overlapped = true;
    return report;
  }

  /** Goes back to `to` steps taken (see StepBack); the hook's carried error belongs to the update stepped back from. */
  async rewind(msg: MessageOf<"rewind">): Promise<number> {
    if (msg.to === undefined) return this.back.taken;
    if (msg.to !== this.back.taken) this.p.hook.clear();
    return this.back.rewind(msg.to);
  }

  exportState(): Promise<OptimizerState> {
    return this.update.exportState();
  }

  importState(state: OptimizerState): Promise<void> {
    return this.update.importState(state);
  }

  dispose(): void {
    this.update.dispose();
  }
}
