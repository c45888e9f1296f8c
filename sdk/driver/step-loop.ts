import type { ResolvedFitOptions } from "../config/fit-options";
import type { Dataset } from "../data/dataset";
import type { StepRecord } from "../metrics/records";
import { epochOrder, globalBatch, stepsPerEpoch } from "../plan/batches";
import { awaitAll } from "./await";
import { FitAborted, type FitContext, type StepDone } from "./fit-context";

/** One step sent to the workers: its replies, and how to turn them into the step's record. */
export interface IssuedStep {
  samples: number;
  done: Promise<StepDone[]>;
  summarize(replies: StepDone[]): Pick<StepRecord, "loss" | "workers" | "straggler"> & Partial<Pick<StepRecord, "bubble">>;
}

/** Steps whose data is sent before the previous ones finish, so workers never wait for input. */
const STEPS_IN_FLIGHT = 2;

/**
 * The step loop every strategy shares: for each epoch and each global batch, `issue` sends the
 * step to the workers; replies become StepRecords (onStep is called with each). An exception
 * from onStep stops the loop after the steps already sent, and is rethrown as FitAborted.
 */
export async function runSteps(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  issue: (step: number, epoch: number, order: Uint32Array | null, start: number, end: number) => IssuedStep,
  more: {
    /** Steps before this one were done by an earlier fit (resuming from a checkpoint). */
    startStep?: number;
    /** Called with no step in flight, every `every` steps and after the last: the workers' state is that of `stepsDone` steps. */
    checkpoint?: { every: number; save(stepsDone: number): Promise<void> };
  } = {},
): Promise<{ history: StepRecord[]; callbackError: FitAborted | undefined }> {
  const all = awaitAll(ctx);
  const history: StepRecord[] = [];
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  let lastEnd = performance.now();
  const fitStart = lastEnd;
  const inFlight: Array<{ step: number; epoch: number; issued: IssuedStep }> = [];
  let callbackError: FitAborted | undefined;
  const record = async (): Promise<void> => {
    const f = inFlight.shift()!;
    ctx.setStep(f.step);
    const [replies] = await all([f.issued.done]);
    const now = performance.now();
    const rec: StepRecord = { step: f.step, epoch: f.epoch, samples: f.issued.samples, ms: now - lastEnd, endMs: now - fitStart, ...f.issued.summarize(replies!) };
    lastEnd = now;
    history.push(rec);
    try {
      o.onStep?.(rec);
    } catch (err) {
      callbackError ??= new FitAborted(err);
    }
  };
  let step = 0;
  const startStep = more.startStep ?? 0;
  let saved = startStep;
  const save = async (): Promise<void> => {
    while (inFlight.length > 0) await record();
    if (callbackError || !more.checkpoint || step === saved) return;
    ctx.setStep(step);
    await more.checkpoint.save(step);
    saved = step;
  };
  try {
    for (let epoch = 0; epoch < o.epochs && !callbackError; epoch++) {
      if ((epoch + 1) * perEpoch <= startStep) {
        step += perEpoch;
        continue;
      }
      const order = epochOrder(dataset.size, o.shuffle, o.seed, epoch);
      for (let i = 0; i < perEpoch && !callbackError; i++, step++) {
        if (step < startStep) continue;
        if (more.checkpoint && step > startStep && step % more.checkpoint.every === 0) await save();
        const [start, end] = globalBatch(dataset.size, o.batchSize, i);
        const issued = issue(step, epoch, order, start, end);
        issued.done.catch(() => undefined);
        inFlight.push({ step, epoch, issued });
        if (inFlight.length >= STEPS_IN_FLIGHT) await record();
      }
    }
    while (inFlight.length > 0) await record();
    await save();
  } finally {
    ctx.setStep(undefined);
  }
  return { history, callbackError };
}
