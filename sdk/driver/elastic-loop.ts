import type { WorkerHandle } from "../members/worker-handle";
import { batchAttachments, type Dataset } from "../data/dataset";
import { WorkerLostError, type MeshtrainError } from "../errors/errors";
import { EpochWalk } from "./epoch-walk";
import { rateField } from "./learning-rates";
import type { ResolvedFitOptions } from "./fit-options";
import type { Tensorlike } from "../protocol/tensor";
import type { EpochValidation, MembershipChange, StepRecord } from "../metrics/records";
import { awaitAll, echoesLoss, survived } from "./await";
import { nonFiniteStop } from "./non-finite";
import type { FitContext } from "./fit-context";
import { inFlightRecord, ringOf, type InFlight } from "./elastic-record";
import { FitAborted, runHook, stepSeen } from "./fit-stop";
import type { ShardedElastic } from "./elastic-sharded";

export interface ElasticHooks {
  /** Loads the model on a worker that joins, with these weights. */
  load(worker: WorkerHandle, weights: Tensorlike[]): Promise<void>;
  /** Each member's slice of a batch of `count` samples: the plan's split while its membership lasts. */
  split(count: number, members: number): readonly number[];
  /** Validation at an epoch's end, by the members then (fit options validationData, validationSplit). */
  validate?: (members: readonly WorkerHandle[], epoch: number) => Promise<Record<string, number>>;
  /**
   * Local SGD: whether the replicas sync after this step. Between syncs the replicas differ, so
   * a loss sends the survivors back to the last sync (the steps since are run again, their
   * records replaced) and workers join right after one.
   */
  syncAfter?: (step: number) => boolean;
  /** Sharded (ZeRO): a loss goes back to the last checkpoint, a join re-shards everyone. */
  sharded?: ShardedElastic;
}

/**
 * Elastic data parallelism: the step loop of synchronous data parallelism that survives lost
 * workers and admits new ones. When a member is lost, the others are re-wired as a new
 * membership (steps sent for the old one are dropped unrun), each reports how many updates it
 * applied, those one ahead step back, and training goes on from the last step every survivor
 * completed, its batch shared among them. A worker added with cluster.add() gets a member's
 * weights and optimizer state and joins at a step boundary. Below minWorkers the fit fails
 * with the loss that took it there.
 */
export function runElastic(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  minWorkers: number,
  t: { fitStart: number; fitStartWall: number; startStep: number },
  hooks: ElasticHooks,
): Promise<{ history: StepRecord[]; membership: MembershipChange[]; members: WorkerHandle[]; stopped: FitAborted | undefined; validation: EpochValidation[] }> {
  return new ElasticLoop(ctx, o, dataset, minWorkers, t, hooks).run();
}

class ElasticLoop {
  private readonly all: ReturnType<typeof awaitAll>;
  private readonly stepMs: number;
  private readonly walk: EpochWalk;
  private readonly total: number;
  private members: WorkerHandle[];
  /** The global step each member was at when it was loaded: its applied count starts there. */
  private readonly base: Map<number, number>;
  private readonly membership: MembershipChange[] = [];
  private history: StepRecord[] = [];
  private readonly joiners: WorkerHandle[] = [];
  private generation = 0;
  private stopped: FitAborted | undefined;
  private wake: (() => void) | null = null;
  private departures = 0;
  /** Steps every member completed, and the next step to send. */
  private done: number;
  private next: number;
  private inflight: InFlight[] = [];
  private lastEnd = performance.now();
  /** Callbacks: the last epoch and step whose begin was called, the last step and epoch ended (a step sent again after a loss is not begun or ended twice). */
  private begun = { epoch: -1, step: -1, ended: -1, epochEnded: -1 };
  /** Sharded: the steps done when the last checkpoint was written. */
  private saved = -1;
  private ended = false;
  /** An epoch whose steps are all recorded and whose end (validation, callbacks) is due before the next step. */
  private pendingEpoch: number | null = null;
  private readonly validation: EpochValidation[] = [];

  constructor(
    private readonly ctx: FitContext,
    private readonly o: ResolvedFitOptions,
    private readonly dataset: Dataset,
    private readonly minWorkers: number,
    private readonly t: { fitStart: number; fitStartWall: number; startStep: number },
    private readonly hooks: ElasticHooks,
  ) {
    this.all = awaitAll(ctx);
    this.stepMs = ctx.spec.timeouts.stepMs;
    this.walk = new EpochWalk(dataset.size, o);
    this.total = this.walk.total;
    this.members = [...ctx.workers];
    const start = Math.max(t.startStep, this.walk.first);
    this.base = new Map<number, number>(this.members.map((h) => [h.rank, start]));
    this.done = this.next = start;
    hooks.sharded?.cadence.begin(start);
    ctx.survive(() => void (this.departures++, this.wake?.()));
    ctx.admit((h) => void (this.joiners.push(h), this.wake?.()));
  }

  async run(): Promise<{ history: StepRecord[]; membership: MembershipChange[]; members: WorkerHandle[]; stopped: FitAborted | undefined; validation: EpochValidation[] }> {
    const cb = this.o.callbacks;
    try {
      await this.hook(() => cb?.trainBegin({ epochs: this.o.epochs, initialEpoch: this.walk.at(this.done).epoch, samples: this.dataset.size, steps: this.walk.perEpoch, batchSize: this.o.batchSize, metrics: ["loss", ...this.o.metrics.map((m) => m.name)] }));
      await this.rewire();
      await this.checkpoint();
      while (!this.stopped && (this.pendingEpoch !== null || (this.done < this.total && !this.ended))) await this.advance();
      await Promise.all(this.inflight.map((f) => f.settled));
      if (!this.stopped) await this.checkpoint();
      if (cb && !this.stopped) await this.hook(() => cb.trainEnd());
    } finally {
      this.ctx.setStep(undefined);
    }
    return { history: this.history, membership: this.membership, members: this.members, stopped: this.stopped, validation: this.validation };
  }

  /** One turn of the loop: recover from a loss, admit joiners, keep two steps in flight, or record the oldest. */
  private async advance(): Promise<void> {
    if (this.departures > 0 || this.members.some((h) => h.lost)) {
      this.departures = 0;
      return this.recover();
    }
    if (this.joiners.length > 0 && this.inflight.length === 0 && this.atSync(this.next)) return this.admit();
    if (this.pendingEpoch !== null) return this.endEpoch(this.pendingEpoch);
    // With callbacks or validation, one step at a time: each batch (and epoch) ends before the next begins, as in model.fit.
    const ahead = this.o.callbacks || this.hooks.validate ? 1 : 2;
    while ((this.joiners.length === 0 || !this.atSync(this.next)) && this.next < this.total && this.next - this.done < ahead && !this.ended) {
      // Sharded: a checkpoint every `every` steps, once the steps before it are recorded.
      if (this.hooks.sharded?.cadence.due(this.next) && this.next > this.saved) {
        if (this.inflight.length > 0) break;
        if (!(await this.checkpoint())) return;
      }
      await this.begin(this.next);
      if (this.stopped || this.ended) return;
      this.issue(this.next++);
    }
    const head = this.inflight[0]!;
    if (!head.result) {
      await this.ctx.guard(new Promise<void>((resolve) => (this.wake = resolve)));
      this.wake = null;
      return;
    }
    const failed = head.result.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed && survived(failed.reason)) {
      this.inflight.shift();
      this.stopped ??= new FitAborted(failed.reason);
      return;
    }
    if (failed) return this.settleFailure(failed);
    this.inflight.shift();
    this.record(head);
    this.done++;
    await this.stepRecorded(head);
    // As model.fit: the epoch a callback stopped in ends too.
    const last = (head.step + 1) % this.walk.perEpoch === 0 || head.step + 1 === this.total;
    if ((this.o.callbacks || this.hooks.validate) && (last || this.ended) && head.epoch > this.begun.epochEnded) this.pendingEpoch = head.epoch;
  }

  /** Callbacks before a step is first sent: its epoch's begin (once) and the batch's. */
  private async begin(step: number): Promise<void> {
    const cb = this.o.callbacks;
    if (!cb || step <= this.begun.step) return;
    const { epoch } = this.walk.at(step);
    if (epoch !== this.begun.epoch) await this.hook(() => cb.epochBegin(epoch));
    this.begun = { ...this.begun, epoch, step };
    await this.hook(() => cb.batchBegin(step - epoch * this.walk.perEpoch));
  }

  /** Callbacks once a step is recorded (every member completed it): the batch's end, and its epoch's when it was the last. */
  private async stepRecorded(f: InFlight): Promise<void> {
    const cb = this.o.callbacks;
    // A step run again after going back to a sync ended once already.
    if (!cb || f.step <= this.begun.ended) return;
    this.begun.ended = f.step;
    const rec = this.history[this.history.length - 1]!;
    await this.hook(() => cb.batchEnd(f.step - f.epoch * this.walk.perEpoch, rec));
  }

  /**
   * An epoch's end, once its steps are recorded: validation by the members then (a member lost
   * meanwhile: the loop recovers and validates again), then the callbacks' epoch end with its logs.
   */
  private async endEpoch(epoch: number): Promise<void> {
    let logs: Record<string, number> = {};
    if (this.hooks.validate) {
      try {
        logs = await this.hooks.validate(this.members, epoch);
      } catch (err) {
        if (survived(err)) this.stopped ??= new FitAborted(err);
        else await this.settleFailure({ status: "rejected", reason: err });
        return;
      }
      this.validation.push({ epoch, logs });
      this.o.onValidated?.(epoch, logs);
    }
    this.pendingEpoch = null;
    this.begun.epochEnded = epoch;
    const cb = this.o.callbacks;
    if (cb) await this.hook(() => cb.epochEnd(epoch, this.history, logs));
  }

  /** Runs a callback hook (see runHook): its error stops the fit, model.stopTraining ends it. */
  private async hook(call: () => Promise<void> | undefined): Promise<void> {
    const r = await runHook(call, () => this.o.callbacks?.stopTraining ?? false);
    this.stopped ??= r.error;
    if (r.ended) this.ended = true;
  }

  /** A failed step is usually the echo of a worker about to be declared lost; anything else ends the fit. */
  private async settleFailure(failed: PromiseRejectedResult): Promise<void> {
    if (!(await echoesLoss(this.ctx, this.members, failed.reason))) throw (await this.ctx.lossWithin(0)) ?? (failed.reason as MeshtrainError);
  }

  private issue(step: number): void {
    const { epoch, order, start, end } = this.walk.at(step);
    const count = end - start;
    const rate = rateField(this.o, step, epoch);
    const slices = [...this.hooks.split(count, this.members.length)];
    let from = start;
    const requests = this.members.map((w, i) => {
      const batch = this.dataset.gather(order, from, from + slices[i]!);
      from += slices[i]!;
      return w.channel.request({ type: "step", step, epoch, weight: slices[i]! / count, generation: this.generation, ...rate, ...(this.hooks.syncAfter?.(step) ? { sync: "after" as const } : {}) }, "stepDone", {
        timeoutMs: this.stepMs,
        waitingFor: `step ${step}`,
        attachments: batchAttachments(batch),
      });
    });
    const f: InFlight = { step, epoch, members: [...this.members], slices, settled: Promise.allSettled(requests), ...rate };
    void f.settled.then((r) => {
      f.result = r;
      this.wake?.();
    });
    this.inflight.push(f);
  }

  private record(f: InFlight): void {
    const now = performance.now();
    const rec = inFlightRecord(f, { ms: now - this.lastEnd, endMs: now - this.t.fitStart, fitStartWall: this.t.fitStartWall });
    this.lastEnd = now;
    this.history.push(rec);
    this.stopped ??= nonFiniteStop(rec, this.o);
    this.ctx.setStep(f.step + 1);
    // onStep sees every recorded step, also those after a reason to stop.
    const stop = stepSeen(rec, this.o.onStep, this.ctx);
    this.stopped ??= stop;
  }

  private async rewire(): Promise<void> {
    this.generation++;
    await this.ctx.connect(ringOf(this.members, this.ctx.workers.length), { members: this.members, generation: this.generation });
  }

  /** After a loss: re-form without the lost, let every old step end, go back to what all completed. */
  private async recover(): Promise<void> {
    const lost = this.members.filter((h) => h.lost);
    this.members = this.members.filter((h) => !h.lost);
    for (const h of lost) {
      this.membership.push({ change: "left", rank: h.rank, address: h.address, atMs: performance.now() - this.t.fitStart, step: this.done, cause: h.lost!.summary, workers: this.members.length });
    }
    if (this.members.length < this.minWorkers) {
      const first = lost[0]!.lost!;
      throw new WorkerLostError(`${first.summary}; ${this.members.length} worker(s) remain, fewer than elastic minWorkers ${this.minWorkers}`, {
        details: first.details,
        hint: `lower minWorkers, or add workers with cluster.add() before too many are lost`,
      });
    }
    await this.rewire();
    await Promise.all(this.inflight.map((f) => f.settled));
    if (this.hooks.sharded) this.goBack(await this.hooks.sharded.fromCheckpoint(this.members));
    else await this.stepBack();
    // The step training goes on from: past the steps every survivor completed, or (local SGD) back at a sync.
    for (const m of this.membership.slice(-lost.length)) m.step = this.done;
  }

  /** Whether a joiner may be loaded before `step`: at any step boundary, or with local SGD right after a sync (or the start). */
  private atSync(step: number): boolean {
    return !this.hooks.syncAfter || step <= Math.max(this.t.startStep, this.walk.first) || this.hooks.syncAfter(step - 1);
  }

  /** Steps every survivor completed stand; a survivor one update ahead of the others steps back. */
  private async stepBack(): Promise<void> {
    const ask = this.hooks.syncAfter ? { type: "rewind" as const, sync: "last" as const } : { type: "rewind" as const };
    const reported = await this.all(this.members.map((h) => h.channel.request(ask, "rewound", { timeoutMs: this.stepMs, waitingFor: "how many steps it applied" })));
    const at = this.members.map((h, i) => this.base.get(h.rank)! + reported[i]!.msg.applied);
    const target = Math.min(...at);
    for (const f of this.inflight) if (f.step >= this.done && f.step < target) this.record(f);
    await this.all(
      this.members.flatMap((h, i) =>
        at[i]! > target ? [h.channel.request({ type: "rewind", to: reported[i]!.msg.applied - (at[i]! - target) }, "rewound", { timeoutMs: this.stepMs, waitingFor: "stepping back one update" })] : [],
      ),
    );
    this.goBack(target);
  }

  /** Training goes on from `target`: steps after it (sent, or recorded) no longer stand; every member counts its updates (sharded: and the next checkpoint) from there. */
  private goBack(target: number): void {
    this.inflight = [];
    this.history = this.history.filter((r) => r.step < target);
    if (this.hooks.sharded) for (const h of this.members) this.base.set(h.rank, target);
    this.hooks.sharded?.cadence.begin(target);
    this.done = this.next = target;
    this.ctx.setStep(target);
  }

  /** Sharded: a checkpoint of the members now (every step sent is recorded); false if the fit stopped meanwhile. */
  private async checkpoint(): Promise<boolean> {
    if (!this.hooks.sharded || this.done === this.saved) return true;
    // False: a member was lost meanwhile; the next turn recovers from the last checkpoint, left whole.
    const { cadence, save } = this.hooks.sharded;
    if (!(await cadence.write(this.done, this.history, () => save(this.members, this.done)))) return false;
    this.saved = this.done;
    return !this.stopped;
  }

  /** At a step boundary: the joiners get a member's weights and optimizer state (sharded: all re-shard), then the ring is re-formed. */
  private async admit(): Promise<void> {
    if (this.hooks.sharded) {
      const joining = this.joiners.splice(0);
      const all = [...this.members, ...joining].sort((a, b) => a.rank - b.rank);
      await this.hooks.sharded.regroup(this.members, all, () => ((this.members = all), this.rewire()));
      for (const h of joining) this.joined(h);
      return this.goBack(this.done);
    }
    const source = this.members[0]!;
    const [weights] = await this.all([source.channel.request({ type: "fetchWeights" }, "weights", { timeoutMs: this.stepMs, waitingFor: "the weights for a joining worker" })]);
    const [state] = await this.all([source.channel.request({ type: "fetchState" }, "state", { timeoutMs: this.stepMs, waitingFor: "the optimizer state for a joining worker" })]);
    for (const h of this.joiners.splice(0)) {
      await this.hooks.load(h, weights!.attachments);
      await this.all([
        h.channel.request({ type: "setState", format: state!.msg.format, names: state!.msg.names, scalars: state!.msg.scalars }, "stateSet", {
          timeoutMs: this.stepMs,
          waitingFor: "the optimizer state to load",
          attachments: state!.attachments,
        }),
      ]);
      this.members = [...this.members, h].sort((a, b) => a.rank - b.rank);
      this.joined(h);
    }
    await this.rewire();
  }

  private joined(h: WorkerHandle): void {
    this.base.set(h.rank, this.done);
    this.membership.push({ change: "joined", rank: h.rank, address: h.address, atMs: performance.now() - this.t.fitStart, step: this.done, workers: this.members.length });
  }
}
