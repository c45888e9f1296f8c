import type { ResolvedFitOptions } from "./fit-options";
import type { Dataset } from "../data/dataset";
import type { StepRecord } from "../metrics/records";
import { EpochWalk, type BatchAt } from "./epoch-walk";
import { awaitAll, survived } from "./await";
import { type FitContext, type StepDone } from "./fit-context";
import { nonFiniteStop } from "./non-finite";
import { askedToStop, FitAborted, stepSeen, stopRequest } from "./fit-stop";

/** One step sent to the workers: its replies, and how to turn them into the step's record. */
export interface IssuedStep {
  samples: number;
  done: Promise<StepDone[]>;
  summarize(replies: StepDone[]): Pick<StepRecord, "loss" | "workers" | "straggler"> & Partial<Pick<StepRecord, "bubble" | "metrics" | "nonFinite" | "skipped">>;
}

/** Steps whose data is sent before the previous ones finish, so workers never wait for input. */
const STEPS_IN_FLIGHT = 2;

/**
 * The step loop every strategy shares: for each epoch and each global batch, `issue` sends the
 * step to the workers; replies become StepRecords (onStep is called with each). The loop stops
 * after the steps already sent, with every worker consistent, on an exception from onStep, a
 * step where a worker found NaN or Infinity (nonFinite "stop"), or a step a worker failed but
 * survived (an op that threw in a user's layer), or when the fit is asked to stop (its AbortSignal,
 * an interrupt, close()); the caller gets that reason as `stopped`.
 */
export function runSteps(ctx: FitContext, o: ResolvedFitOptions, dataset: Dataset, issue: IssueStep, more: LoopOptions = {}): Promise<{ history: StepRecord[]; stopped: FitAborted | undefined }> {
  return new StepLoop(ctx, o, dataset, issue, more).run();
}

export type IssueStep = (batch: BatchAt) => IssuedStep;

export interface LoopOptions {
  /** Steps before this one were done by an earlier fit (resuming from a checkpoint). */
  startStep?: number;
  /** Called with no step in flight, every `every` steps and after the last: the workers' state is that of `stepsDone` steps. */
  checkpoint?: { every: number; save(stepsDone: number): Promise<void> };
}

/** The one place a fit's steps are sent and recorded, one step boundary at a time. */
class StepLoop {
  private readonly all: ReturnType<typeof awaitAll>;
  private readonly history: StepRecord[] = [];
  private readonly inFlight: Array<{ step: number; epoch: number; issued: IssuedStep }> = [];
  private readonly fitStart = performance.now();
  private lastEnd = this.fitStart;
  private stopped: FitAborted | undefined;
  /** The next step to send, and the steps done when the last checkpoint was written. */
  private step = 0;
  private saved: number;

  constructor(private readonly ctx: FitContext, private readonly o: ResolvedFitOptions, private readonly dataset: Dataset, private readonly issue: IssueStep, private readonly more: LoopOptions) {
    this.all = awaitAll(ctx);
    this.saved = more.startStep ?? 0;
  }

  async run(): Promise<{ history: StepRecord[]; stopped: FitAborted | undefined }> {
    const startStep = this.more.startStep ?? 0;
    this.step = startStep;
    try {
      for (const batch of new EpochWalk(this.dataset.size, this.o).steps(startStep)) {
        this.stopped ??= stopRequest(this.ctx);
        if (this.stopped) break;
        const every = this.more.checkpoint?.every;
        if (every && batch.step > startStep && batch.step % every === 0) await this.save();
        const issued = this.issue(batch);
        issued.done.catch(() => undefined);
        this.inFlight.push({ step: batch.step, epoch: batch.epoch, issued });
        this.step = batch.step + 1;
        if (this.inFlight.length >= STEPS_IN_FLIGHT) await this.record();
      }
      while (this.inFlight.length > 0) await this.record();
      await this.save();
    } finally {
      this.ctx.setStep(undefined);
    }
    return { history: this.history, stopped: this.stopped };
  }

  /** Waits for the oldest step in flight and records it; onStep sees the record. */
  private async record(): Promise<void> {
    const f = this.inFlight.shift()!;
    this.ctx.setStep(f.step);
    let replies: StepDone[] | undefined;
    try {
      [replies] = await this.all([f.issued.done]);
    } catch (err) {
      if (!survived(err)) throw err;
      this.stopped ??= new FitAborted(err);
      return;
    }
    const now = performance.now();
    const rec: StepRecord = { step: f.step, epoch: f.epoch, samples: f.issued.samples, ms: now - this.lastEnd, endMs: now - this.fitStart, ...f.issued.summarize(replies!) };
    this.lastEnd = now;
    this.history.push(rec);
    this.stopped ??= nonFiniteStop(rec, this.o);
    // onStep sees every recorded step, also those after a reason to stop.
    const stop = stepSeen(rec, this.o.onStep, this.ctx);
    this.stopped ??= stop;
  }

  /** A checkpoint of every step sent so far, with none in flight. */
  private async save(): Promise<void> {
    while (this.inFlight.length > 0) await this.record();
    // After an abort the workers are consistent at the last whole step: that is worth keeping.
    if ((this.stopped && !askedToStop(this.stopped)) || !this.more.checkpoint || this.step === this.saved) return;
    this.ctx.setStep(this.step);
    await this.more.checkpoint.save(this.step);
    this.saved = this.step;
  }
}

