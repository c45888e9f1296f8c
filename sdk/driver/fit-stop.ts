import { AbortError, type MeshtrainError } from "../errors/errors";
import type { RunRecord, StepRecord } from "../metrics/records";

/**
 * Why the running fit should stop at its next step boundary, if anyone asked: its AbortSignal,
 * an interrupt (Ctrl-C, a notebook's interrupt button) or cluster.close(). The step loops ask
 * after every step; the first request wins.
 */
export class FitStop {
  private reason: AbortError | undefined;
  private readonly detach: () => void;

  constructor(signal: AbortSignal | undefined) {
    const onAbort = (): void =>
      this.request(
        `fit aborted by its AbortSignal${signal?.reason !== undefined ? ` (${describe(signal.reason)})` : ""}`,
      );
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    this.detach = () => signal?.removeEventListener("abort", onAbort);
  }

  /** Asks the fit to stop after the step in flight. */
  request(summary: string): void {
    this.reason ??= new AbortError(summary, {
      hint: "the workers finished the steps in flight and are ready: fit again on the same cluster, or resume from a checkpoint written with fit's checkpoint option",
    });
  }

  get requested(): AbortError | undefined {
    return this.reason;
  }

  /** The fit is over: its signal no longer concerns this cluster. */
  dispose(): void {
    this.detach();
  }
}

function describe(reason: unknown): string {
  if (reason instanceof Error) return reason.name === "AbortError" ? "aborted" : reason.message;
  return String(reason);
}

/**
 * Thrown by a runtime for a failure that left every worker in a known state (bad input found
 * before training, a model that did not load, an exception from the user's onStep): the
 * cluster stays usable and the user gets `error` itself.
 */
export class FitAborted {
  /** When the user asked to stop: what was recorded up to there (the run rides on the AbortError). */
  partial: RunRecord | undefined = undefined;
  constructor(readonly error: unknown) {}
}

/** The fit's stop request (AbortSignal, interrupt, close()) as a loop's reason to stop, if there is one. */
export function stopRequest(ctx: StopAsked): FitAborted | undefined {
  const e = ctx.stopRequested();
  return e ? new FitAborted(e) : undefined;
}

/**
 * What every loop does with a step (or async round) it recorded: onStep sees it; the loop stops
 * there if onStep threw or the fit was asked to stop.
 */
export function stepSeen(
  rec: StepRecord,
  onStep: ((rec: StepRecord) => void) | undefined,
  ctx: StopAsked,
): FitAborted | undefined {
  try {
    onStep?.(rec);
  } catch (err) {
    return new FitAborted(err);
  }
  return stopRequest(ctx);
}

/** A stop asked for by the user, after which a checkpoint of the last whole step is still written. */
export function askedToStop(stopped: FitAborted | undefined): boolean {
  return stopped?.error instanceof AbortError;
}

/** What the loops ask at every step boundary: whether the fit was asked to stop, and why. */
export interface StopAsked {
  stopRequested(): MeshtrainError | undefined;
}

/**
 * Runs a callback hook as the step loops do: one that throws stops the fit with its error (as
 * onStep's exceptions do), and one that set model.stopTraining (`stopTraining()` says) ends it
 * at the next step boundary.
 */
export async function runHook(
  call: () => Promise<void> | undefined,
  stopTraining: () => boolean,
): Promise<{ error?: FitAborted; ended: boolean }> {
  let error: FitAborted | undefined;
  try {
    await call();
  } catch (err) {
    error = new FitAborted(err);
  }
  return { ...(error ? { error } : {}), ended: stopTraining() };
}
