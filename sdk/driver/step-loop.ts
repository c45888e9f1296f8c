import type { ResolvedFitOptions } from "./fit-options";
import type { Dataset } from "../data/dataset";
import type { EpochValidation, StepRecord } from "../metrics/records";
import { EpochWalk, type BatchAt } from "./epoch-walk";
import { awaitAll, survived } from "./await";
import { type FitContext, type StepDone } from "./fit-context";
import { nonFiniteStop } from "./non-finite";
import { rateField } from "./learning-rates";
import { askedToStop, FitAborted, runHook, stepSeen, stopRequest } from "./fit-stop";
import type { Cadence } from "./checkpoint/cadence";

/** One step sent to the workers: its replies, and how to turn them into the step's record. */
export interface IssuedStep {
  samples: number;
  done: Promise<StepDone[]>;
  summarize(
    replies: StepDone[],
  ): Pick<StepRecord, "loss" | "workers" | "straggler"> &
    Partial<Pick<StepRecord, "bubble" | "metrics" | "nonFinite" | "skipped">>;
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
export function runSteps(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  issue: IssueStep,
  more: LoopOptions = {},
): Promise<LoopResult> {
  return new StepLoop(ctx, o, dataset, issue, more).run();
}

export type IssueStep = (batch: BatchAt) => IssuedStep;

/** What a loop recorded, and why it stopped early (if it did). */
export interface LoopResult {
  history: StepRecord[];
  stopped: FitAborted | undefined;
  /** Each epoch's validation (val_ entries), where the fit validates. */
  validation: EpochValidation[];
}

export interface LoopOptions {
  /** Steps before this one were done by an earlier fit (resuming from a checkpoint). */
  startStep?: number;
  /** Called with no step in flight, every `every` steps and after the last: the workers' state is that of `stepsDone` steps. */
  checkpoint?: { cadence: Cadence; save(stepsDone: number): Promise<void> };
  /** Called at each epoch's end with no step in flight: the validation's logs (val_loss, val_ metrics). */
  validate?: (epoch: number) => Promise<Record<string, number>>;
  /** One step in flight, not two: a step that recovers from a loss inside itself (elastic sync servers). */
  oneAtATime?: boolean;
}

/** The one place a fit's steps are sent and recorded, one step boundary at a time. */
class StepLoop {
  private readonly all: ReturnType<typeof awaitAll>;
  private readonly history: StepRecord[] = [];
  private readonly inFlight: Array<{ step: number; epoch: number; issued: IssuedStep; learningRate?: number }> = [];
  private readonly fitStart = performance.now();
  private lastEnd = this.fitStart;
  private stopped: FitAborted | undefined;
  /** The next step to send, and the steps done when the last checkpoint was written. */
  private step = 0;
  private saved: number;
  /** Callbacks: the epoch begun last and the last one ended; a callback asked to end the fit (model.stopTraining). */
  private epoch = -1;
  private epochEnded = -1;
  private ended = false;
  private readonly validation: EpochValidation[] = [];
  private readonly walk: EpochWalk;

  constructor(
    private readonly ctx: FitContext,
    private readonly o: ResolvedFitOptions,
    private readonly dataset: Dataset,
    private readonly issue: IssueStep,
    private readonly more: LoopOptions,
  ) {
    this.all = awaitAll(ctx);
    this.saved = more.startStep ?? 0;
    this.walk = new EpochWalk(dataset.size, o);
  }

  async run(): Promise<LoopResult> {
    const walk = this.walk;
    const startStep = Math.max(this.more.startStep ?? 0, walk.first);
    this.step = startStep;
    this.more.checkpoint?.cadence.begin(startStep);
    const cb = this.o.callbacks;
    // Callbacks and validation see epochs end: a new epoch's first step waits for the last one's.
    const epochWise = cb !== undefined || this.more.validate !== undefined;
    try {
      await this.hook(() =>
        cb?.trainBegin({
          epochs: this.o.epochs,
          initialEpoch: walk.at(startStep).epoch,
          samples: this.dataset.size,
          steps: walk.perEpoch,
          batchSize: this.o.batchSize,
          metrics: ["loss", ...this.o.metrics.map((m) => m.name)],
        }),
      );
      for (const batch of walk.steps(startStep)) {
        this.stopped ??= stopRequest(this.ctx);
        if (this.stopped || this.ended) break;
        if (epochWise && batch.epoch !== this.epoch) {
          // model.fit ends an epoch before it begins the next: the steps in flight finish first.
          if (this.epoch >= 0 && !(await this.endEpoch())) break;
          this.epoch = batch.epoch;
          if (cb) await this.hook(() => cb.epochBegin(batch.epoch));
        }
        if (cb) await this.hook(() => cb.batchBegin(batch.step - batch.epoch * walk.perEpoch));
        if (this.stopped || this.ended) break;
        if (this.more.checkpoint?.cadence.due(batch.step)) await this.save();
        const rate = rateField(this.o, batch.step, batch.epoch);
        const issued = this.issue({ ...batch, ...rate });
        issued.done.catch(() => undefined);
        this.inFlight.push({ step: batch.step, epoch: batch.epoch, issued, ...rate });
        this.step = batch.step + 1;
        // With callbacks, one step at a time: each batch ends (and may stop the fit) before the next begins, as in model.fit.
        if (this.inFlight.length >= (cb || this.more.oneAtATime ? 1 : STEPS_IN_FLIGHT)) await this.record();
      }
      while (this.inFlight.length > 0) await this.record();
      await this.save();
      // As model.fit: the epoch a callback stopped in ends too, then the training.
      if (epochWise && !this.stopped) {
        if (this.epoch >= 0) await this.endEpoch();
        if (cb && !this.stopped) await this.hook(() => cb.trainEnd());
      }
    } finally {
      this.ctx.setStep(undefined);
    }
    return { history: this.history, stopped: this.stopped, validation: this.validation };
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
    const rec: StepRecord = {
      step: f.step,
      epoch: f.epoch,
      samples: f.issued.samples,
      ms: now - this.lastEnd,
      endMs: now - this.fitStart,
      ...f.issued.summarize(replies!),
      ...(f.learningRate !== undefined ? { learningRate: f.learningRate } : {}),
    };
    this.lastEnd = now;
    this.history.push(rec);
    this.stopped ??= nonFiniteStop(rec, this.o);
    // onStep sees every recorded step, also those after a reason to stop.
    const stop = stepSeen(rec, this.o.onStep, this.ctx);
    this.stopped ??= stop;
    const cb = this.o.callbacks;
    if (cb) await this.hook(() => cb.batchEnd(f.step - f.epoch * this.walk.perEpoch, rec));
  }

  /** Runs a callback hook (see runHook): its error stops the fit, model.stopTraining ends it. */
  private async hook(call: () => Promise<void> | undefined): Promise<void> {
    const r = await runHook(call, () => this.o.callbacks?.stopTraining ?? false);
    this.stopped ??= r.error;
    if (r.ended) this.ended = true;
  }

  /** The steps in flight recorded, the epoch validated and its end called; false when the fit stops there. */
  private async endEpoch(): Promise<boolean> {
    while (this.inFlight.length > 0) await this.record();
    if (this.stopped || this.epochEnded === this.epoch) return !this.stopped;
    this.epochEnded = this.epoch;
    let logs: Record<string, number> = {};
    if (this.more.validate) {
      try {
        logs = await this.more.validate(this.epoch);
        this.validation.push({ epoch: this.epoch, logs });
        this.o.onValidated?.(this.epoch, logs);
      } catch (err) {
        if (!survived(err)) throw err;
        this.stopped ??= new FitAborted(err);
        return false;
      }
    }
    await this.hook(() => this.o.callbacks?.epochEnd(this.epoch, this.history, logs));
    return !this.stopped && !this.ended;
  }

  /** A checkpoint of every step sent so far, with none in flight. */
  private async save(): Promise<void> {
    while (this.inFlight.length > 0) await this.record();
    // After an abort the workers are consistent at the last whole step: that is worth keeping.
    if ((this.stopped && !askedToStop(this.stopped)) || !this.more.checkpoint || this.step === this.saved) return;
    this.ctx.setStep(this.step);
    const { cadence, save } = this.more.checkpoint;
    await cadence.write(this.step, this.history, () => save(this.step));
    this.saved = this.step;
  }
}
