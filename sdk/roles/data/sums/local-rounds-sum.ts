import { transfers } from "../../../compute/device-io";
import { slowReport } from "../../../compute/loaded-replica";
import { feedRows } from "../../../compute/objective";
import { slowDown, type SliceOutcome } from "../../../compute/slice-gradient";
import { survivedStepError } from "../../../compute/step-health";
import type { OptimizerState, UpdateRule } from "../../../compute/tfjs-update";
import { makeUpdateRule } from "../../../compute/update-rule";
import type { MessageOf } from "../../../protocol/messages";
import type { OptimizerSpec } from "../../../protocol/optimizer-spec";
import { wallClock } from "../../../util/clock";
import type { HostIO } from "../../role";
import { LocalRounds } from "../local-sgd";
import type { StepResult } from "../step-result";
import type { ReplicaParts, StepInput } from "./gradient-sum";
import { WholeModelSum } from "./whole-model-sum";

/**
 * Local SGD and DiLoCo (see LocalRounds): a step is the slice's own mean gradient through this
 * replica's optimizer, alone; a sync step then sums the weights' change since the last sync
 * through the hook, which the outer optimizer applies.
 */
export class LocalRoundsSum extends WholeModelSum {
  readonly kind = "local";

  private constructor(
    p: ReplicaParts,
    /** The replica's own (inner) optimizer. */
    private readonly update: UpdateRule,
    private readonly local: LocalRounds,
  ) {
    super(p);
  }

  static async start(p: ReplicaParts, outer: OptimizerSpec): Promise<LocalRoundsSum> {
    const update = makeUpdateRule(p.r.vars, p.load.optimizer);
    return new LocalRoundsSum(p, update, await LocalRounds.start(p.r, outer, p.load.elastic ? update : null));
  }

  // long: one step's phases in order (the slice alone, then a sync's sum), each timed, and the report that names them
  async step(s: StepInput, io: HostIO): Promise<StepResult> {
    const { r, hook } = this.p;
    const t0 = performance.now();
    const startedAt = wallClock();
    const n = r.gradientLength;
    const allReduce = (d: Float32Array, w?: Parameters<HostIO["allReduce"]>[1]) => io.allReduce(d, w);
    transfers.reset();
    let slice: SliceOutcome = { loss: 0 };
    if (s.sync !== "only" && feedRows(s.x) > 0) {
      const stateBefore = await r.state.snapshot();
      const grad = this.p.buffer.take(n + r.state.length + 1);
      slice = await this.p.slice.fill(1, s.x, s.y, grad, stateBefore, null, allReduce, s.step);
      if (grad[grad.length - 1] !== 0) r.state.set(stateBefore);
      else this.update.apply(grad.subarray(0, n), s.learningRate);
      this.p.buffer.give(grad);
    }
    if (s.sync !== "only") this.local.took(s.weight);
    const slowdownMs = await slowDown(this.p.load.slowdown ?? 1, performance.now() - t0);
    const t1 = performance.now();
    const sum = (change: Float32Array) => {
      if (change[change.length - 1] === 0) hook.round(change.subarray(0, n), 0);
      return hook.sum(change, n, allReduce);
    };
    const synced = s.sync
      ? await this.local.sync({
          sum,
          overflowed: (d) => hook.overflowed(d, n, r),
          kept: (kept) => hook.settled(kept),
          names: r.names,
          sizes: r.sizes,
        })
      : null;
    const t2 = performance.now();
    if (slice.failure !== undefined) throw survivedStepError(slice.failure, s.step);
    const nonFinite = slice.nonFinite ?? synced?.nonFinite;
    const talked = synced ? synced.stats.commMs + synced.stats.waitMs : 0;
    return {
      loss: slice.loss,
      startedAt,
      computeMs: t1 - t0,
      slowdownMs,
      commMs: synced?.stats.commMs ?? 0,
      waitMs: synced?.stats.waitMs ?? 0,
      sentBytes: synced?.stats.bytesSent ?? 0,
      applyMs: synced ? t2 - t1 - talked : 0,
      ...(slice.metrics ? { metrics: slice.metrics } : {}),
      ...slowReport(r),
      ...(nonFinite ? { nonFinite } : {}),
      ...(slice.nonFinite || synced?.skipped ? { skipped: true } : {}),
    };
  }

  /** Back to a sync (the last, or one named by its steps taken), its carried rounding error with it. */
  rewind(msg: MessageOf<"rewind">): Promise<number> {
    const to = msg.sync ?? msg.to;
    if (to === undefined) return Promise.resolve(this.local.stepsTaken);
    this.p.hook.clear();
    return this.local.back(to);
  }

  /** The outer optimizer's state goes with the inner's (a worker joining at a sync). */
  async exportState(): Promise<OptimizerState> {
    return this.local.exportState(await this.update.exportState());
  }

  importState(state: OptimizerState): Promise<void> {
    return this.local.importState(state, (inner) => this.update.importState(inner));
  }

  dispose(): void {
    this.update.dispose();
    this.local.dispose();
  }
}
