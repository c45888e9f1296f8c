import type { WorkerHandle } from "../../members/worker-handle";
import { batchAttachments, type Dataset } from "../../data/dataset";
import { WorkerLostError, type MeshtrainError } from "../../errors/errors";
import { splitOf } from "../../plan/batches";
import { EpochWalk } from "../../driver/epoch-walk";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { pushRecord, roundRecord } from "./push-records";
import { leadOf, mayStart } from "./ssp";
import type { StepRecord, Departure, EpochValidation, PushRecord } from "../../metrics/records";
import type { PsPlan } from "../../plan/plans";
import { awaitAll, survived } from "../../driver/await";
import { nonFiniteError } from "../../driver/non-finite";
import { type FitContext, type StepDone } from "../../driver/fit-context";
import { FitAborted, stepSeen, stopRequest } from "../../driver/fit-stop";

/** A worker's slice of one global batch: the unit of work handed out. */
interface Slice {
  epoch: number;
  order: Uint32Array | null;
  start: number;
  end: number;
}

interface Running {
  slice: Slice;
  clock: number;
  lead: number;
}

interface WorkerState {
  handle: WorkerHandle;
  /** Steps handed to it so far: the clock of its next step. */
  next: number;
  finished: number;
  running: Running[];
  /** Gone: it left, or its step failed and the driver waits to learn whether it left. */
  gone: boolean;
}

type Event =
  | { kind: "done"; w: WorkerState; run: Running; reply: StepDone }
  | { kind: "failed"; w: WorkerState; run: Running; error: unknown }
  | { kind: "departed"; w: WorkerState; error: MeshtrainError }
  | { kind: "undecided"; w: WorkerState; error: unknown }
  | { kind: "validated"; epoch: number; logs: Record<string, number> }
  | { kind: "validationFailed"; error: unknown; gone: number };

/** Validation at an epoch's end by the live workers (fit options validationData, validationSplit). */
export type AsyncValidate = (workers: readonly WorkerHandle[], epoch: number) => Promise<Record<string, number>>;

/** Steps handed to a worker before its last one finished, so it never waits for data. */
const AHEAD = 2;

type AsyncResult = {
  history: StepRecord[];
  pushes: PushRecord[];
  departures: Departure[];
  live: WorkerHandle[];
  stopped: FitAborted | undefined;
  validation: EpochValidation[];
};

/**
 * Asynchronous training: each free worker is handed the next slice of data (so a slow worker
 * simply does fewer), pulls, computes and pushes on its own, and the servers apply every push
 * when it arrives. With a staleness bound k, a worker starts a step only while it is at most k
 * steps ahead of the slowest live worker. A worker that leaves is recorded; the slices it was
 * working on go to the others unless the servers already applied them.
 */
export function runAsync(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  plan: PsPlan,
  t: { fitStart: number; fitStartWall: number },
  validate?: AsyncValidate,
): Promise<AsyncResult> {
  return new AsyncLoop(ctx, o, dataset, plan, t, validate).run();
}

/** Every slice of every epoch's global batches, in the order they are handed out (popped from the end). */
function sliceQueue(o: ResolvedFitOptions, dataset: Dataset, plan: PsPlan): Slice[] {
  const queue: Slice[] = [];
  for (const { epoch, order, start, end } of new EpochWalk(dataset.size, o).steps()) {
    let from = start;
    for (const size of splitOf(plan.batch, end - start).perReplica) {
      if (size > 0) queue.push({ epoch, order, start: from, end: from + size });
      from += size;
    }
  }
  return queue.reverse();
}

class AsyncLoop {
  private readonly n: number;
  private readonly stepMs: number;
  private readonly grace: number;
  private readonly queue: Slice[];
  private readonly states: WorkerState[];
  private readonly events: Event[] = [];
  private wake: (() => void) | null = null;
  private readonly pushes: PushRecord[] = [];
  private readonly departures: Departure[] = [];
  private readonly history: StepRecord[] = [];
  private round: PushRecord[] = [];
  private roundStart = 0;
  private stopped: FitAborted | undefined;
  /**
   * With validation, epochs end as in model.fit: no slice of the next epoch is handed out until
   * every push of this one is applied and the workers validated on the servers' weights.
   */
  private epoch = -1;
  private validating = false;
  private readonly validation: EpochValidation[] = [];

  constructor(
    private readonly ctx: FitContext,
    private readonly o: ResolvedFitOptions,
    private readonly dataset: Dataset,
    private readonly plan: PsPlan,
    private readonly t: { fitStart: number; fitStartWall: number },
    private readonly validate?: AsyncValidate,
  ) {
    this.n = ctx.workers.length;
    this.stepMs = ctx.spec.timeouts.stepMs;
    this.grace = Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500);
    this.queue = sliceQueue(o, dataset, plan);
    this.states = ctx.workers.map((handle) => ({ handle, next: 0, finished: 0, running: [], gone: false }));
    ctx.survive((h, error) => this.emit({ kind: "departed", w: this.states[h.rank]!, error }));
  }

  private emit(e: Event): void {
    this.events.push(e);
    this.wake?.();
  }

  private finishedOf(): Array<number | null> {
    return this.states.map((s) => (s.gone ? null : s.finished));
  }

  async run(): Promise<AsyncResult> {
    this.dispatch();
    while (this.states.some((s) => s.running.length > 0) || (this.queue.length > 0 && !this.stopped)) {
      if (this.events.length === 0) {
        await this.ctx.guard(new Promise<void>((resolve) => (this.wake = resolve)));
        this.wake = null;
      }
      await this.handle(this.events.shift()!);
      this.dispatch();
    }
    this.closeRound();
    const live = this.states.filter((s) => !s.gone).map((s) => s.handle);
    // The last epoch's validation: every push applied, nothing else to wait for.
    if (this.validate && !this.stopped && this.epoch >= 0 && this.validation.at(-1)?.epoch !== this.epoch)
      this.validated(this.epoch, await this.validate(live, this.epoch));
    return {
      history: this.history,
      pushes: this.pushes,
      departures: this.departures,
      live,
      stopped: this.stopped,
      validation: this.validation,
    };
  }

  private async handle(e: Event): Promise<void> {
    switch (e.kind) {
      case "done": {
        if (e.w.gone) return;
        e.w.running.splice(e.w.running.indexOf(e.run), 1);
        e.w.finished++;
        const slice = e.run.slice;
        this.record(
          pushRecord(e.reply, e.w.handle, this.t.fitStartWall, {
            clock: e.run.clock,
            epoch: slice.epoch,
            samples: slice.end - slice.start,
            lead: e.run.lead,
            endMs: performance.now() - this.t.fitStart,
          }),
        );
        // The servers dropped a push from a non-finite slice: the fit stops (nonFinite "stop") or goes on, recorded.
        const found = e.reply.msg.nonFinite;
        if (found && this.o.nonFinite === "stop")
          this.stopped ??= new FitAborted(
            nonFiniteError(e.run.clock, [{ rank: e.w.handle.rank, ...found }], this.o.optimizer.learningRate),
          );
        return;
      }
      case "failed": {
        if (survived(e.error)) {
          e.w.running.splice(e.w.running.indexOf(e.run), 1);
          this.stopped ??= new FitAborted(e.error);
          return;
        }
        // A failed step is usually the echo of a worker about to be declared lost; anything
        // else (a bad batch, a server's error, a timeout) ends the fit. The grace's timer keeps
        // the process alive: when a server dies, every request in flight fails at once and
        // nothing else may (sockets and workers' processes do not), and the fit would never end.
        if (e.w.gone || e.w.handle.lost) return;
        const w = e.w;
        setTimeout(() => this.emit({ kind: "undecided", w, error: e.error }), this.grace);
        return;
      }
      case "undecided":
        if (!e.w.gone && !e.w.handle.lost) throw (await this.ctx.lossWithin(0)) ?? e.error;
        return;
      case "departed":
        if (!e.w.gone) await this.depart(e.w, e.error);
        return;
      case "validated":
        this.validating = false;
        this.validated(e.epoch, e.logs);
        return;
      case "validationFailed":
        // A worker lost meanwhile: the others validate again; anything else ends the fit.
        if (survived(e.error)) this.stopped ??= new FitAborted(e.error);
        else if (this.states.filter((s) => s.gone || s.handle.lost).length === e.gone)
          throw (await this.ctx.lossWithin(0)) ?? e.error;
        this.validating = false;
        return;
    }
  }

  private validated(epoch: number, logs: Record<string, number>): void {
    this.validation.push({ epoch, logs });
    this.o.onValidated?.(epoch, logs);
  }

  /** Whether handing out the next slice waits for its epoch's predecessor to end (validation). */
  private atEpochEnd(): boolean {
    const next = this.queue[this.queue.length - 1];
    if (!this.validate || !next || this.epoch < 0 || next.epoch === this.epoch) return false;
    if (this.validation.at(-1)?.epoch === this.epoch) return false;
    if (!this.validating && this.states.every((s) => s.running.length === 0)) {
      this.validating = true;
      const epoch = this.epoch;
      const live = this.states.filter((s) => !s.gone).map((s) => s.handle);
      const gone = this.states.filter((s) => s.gone || s.handle.lost).length;
      this.validate(live, epoch).then(
        (logs) => this.emit({ kind: "validated", epoch, logs }),
        (error: unknown) => setTimeout(() => this.emit({ kind: "validationFailed", error, gone }), this.grace),
      );
    }
    return true;
  }

  /** Hands every free worker its next slices, as far as the staleness bound allows. */
  private dispatch(): void {
    // Asked at every push, not only when a round closes: a round is n pushes long.
    this.stopped ??= stopRequest(this.ctx);
    for (const w of this.states) {
      while (
        !w.gone &&
        !this.stopped &&
        this.queue.length > 0 &&
        w.running.length < AHEAD &&
        mayStart(w.next, this.finishedOf(), this.plan.staleness)
      ) {
        if (this.atEpochEnd()) return;
        const slice = this.queue.pop()!;
        this.epoch = slice.epoch;
        const run: Running = { slice, clock: w.next++, lead: leadOf(w.next - 1, this.finishedOf()) };
        w.running.push(run);
        const batch = this.dataset.gather(slice.order, slice.start, slice.end);
        w.handle.channel
          .request(
            { type: "step", step: run.clock, epoch: slice.epoch, weight: 1, ps: { clock: run.clock } },
            "stepDone",
            {
              timeoutMs: this.stepMs,
              waitingFor: `its step ${run.clock} (pull, compute, push)`,
              attachments: batchAttachments(batch),
            },
          )
          .then(
            (reply) => this.emit({ kind: "done", w, run, reply }),
            (error: unknown) => this.emit({ kind: "failed", w, run, error }),
          );
      }
    }
  }

  private record(p: PushRecord): void {
    this.pushes.push(p);
    this.round.push(p);
    if (this.round.length >= this.n) this.closeRound();
  }

  private closeRound(): void {
    if (this.round.length === 0) return;
    const rec = roundRecord(this.history.length, this.round, this.roundStart);
    this.roundStart = rec.endMs;
    this.round = [];
    this.history.push(rec);
    this.ctx.setStep(this.history.length);
    // onStep sees every recorded step, also those after a reason to stop.
    const stop = stepSeen(rec, this.o.onStep, this.ctx);
    this.stopped ??= stop;
  }

  private async depart(w: WorkerState, error: MeshtrainError): Promise<void> {
    w.gone = true;
    const lost = w.running.splice(0);
    // Which of its pushes did the servers apply before it left? Those are done; the rest go back.
    const answers =
      lost.length === 0
        ? []
        : await awaitAll(this.ctx)(
            this.ctx.servers.map((s) =>
              s.channel.request(
                { type: "applied", pushes: lost.map((r) => ({ rank: w.handle.rank, clock: r.clock })) },
                "appliedReply",
                { timeoutMs: this.stepMs, waitingFor: "which pushes it applied" },
              ),
            ),
          );
    let requeued = 0;
    let alreadyApplied = 0;
    let partial = 0;
    lost.forEach((r, i) => {
      const applied = answers.filter((a) => a.msg.applied[i]).length;
      if (applied === 0) {
        this.queue.push(r.slice);
        requeued++;
      } else {
        alreadyApplied++;
        if (applied < answers.length) partial++;
      }
    });
    this.departures.push({
      rank: w.handle.rank,
      address: w.handle.address,
      atMs: performance.now() - this.t.fitStart,
      step: this.history.length,
      cause: error.summary,
      requeued,
      alreadyApplied,
      partial,
    });
    if (this.states.every((s) => s.gone)) {
      throw new WorkerLostError(`every worker left: the last, worker rank ${w.handle.rank}, because ${error.summary}`, {
        details: { rank: w.handle.rank, address: w.handle.address, step: this.history.length },
        hint: "launch a new cluster; the parameter servers kept every update they applied, but this fit cannot finish",
      });
    }
  }
}
