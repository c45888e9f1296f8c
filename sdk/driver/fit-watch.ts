import type { ResolvedFitOptions } from "./fit-options";
import type { ClusterSpec } from "../config/cluster-spec";
import type { Dataset } from "../data/dataset";
import { StallWatch } from "./stall-watch";
import { AbortError, MeshtrainError, TimeoutError } from "../errors/errors";
import { EpochWalk } from "./epoch-walk";
import { installedFitObserver, type FitWatch } from "../metrics/observer";
import type { FitEnd, LogLine, StepRecord } from "../metrics/records";
import { FitAborted } from "./fit-stop";
import { terminalWatch } from "../viz/terminal-progress";
import { EpochLines } from "../viz/epoch-lines";
import type { WorkerHandle } from "../members/worker-handle";
import type { WorkerOutput } from "../members/worker-output";

/**
 * Everything that watches one fit from the driver: the progress display (the notebook's live
 * plot, or a terminal bar), the stall watch, and the workers' output lines that belong to it.
 */
export class FitWatchers {
  private readonly display: FitWatch;
  private readonly stall: StallWatch;
  private readonly mark: number;

  constructor(
    spec: ClusterSpec,
    o: ResolvedFitOptions,
    dataset: Dataset,
    private readonly parts: {
      size: number;
      output: WorkerOutput;
      members(): readonly WorkerHandle[];
      step(): number | undefined;
    },
  ) {
    this.display = display(spec, o, dataset, parts.size);
    this.mark = parts.output.mark();
    this.stall = new StallWatch({
      stallMs: spec.timeouts.stallMs,
      stepMs: spec.timeouts.stepMs,
      heartbeatIntervalMs: spec.heartbeat.intervalMs,
      heartbeatTimeoutMs: spec.heartbeat.timeoutMs,
      members: parts.members,
      step: parts.step,
      print: (report) => process.stderr.write(`${report}\n`),
    });
  }

  /**
   * The plan is made and the steps begin: from here a fit that makes no progress is stalled.
   * Timing the model for the plan before (a second or two, each request with its own timeout
   * naming the worker) is not a step that failed to finish.
   */
  stepsBegin(): void {
    this.stall.start();
  }

  step(r: StepRecord): void {
    this.stall.progressed();
    this.display.step(r);
  }

  /** An epoch's validation logs, for a display that prints them. */
  validated(epoch: number, logs: Record<string, number>): void {
    if (this.display instanceof EpochLines) this.display.validated(epoch, logs);
  }

  /**
   * The fit ended: with `error` when it failed or was stopped, else as `ended` says (its last
   * step, or a callback). Returns the error to report, a timeout with the stall report added.
   */
  end(error?: unknown, ended: FitEnd = { by: "done" }): unknown {
    this.stall.stop();
    this.parts.output.flush();
    this.display.end(error === undefined ? ended : endOf(error));
    if (!(error instanceof TimeoutError)) return error;
    return new TimeoutError(`${error.summary}\n${this.stall.reportForTimeout()}`, {
      details: error.details,
      ...(error.hint ? { hint: error.hint } : {}),
      cause: error,
    });
  }

  /** The workers' output lines received since the fit started. */
  logs(): LogLine[] {
    return this.parts.output.since(this.mark);
  }
}

/** The notebook's live plot when it is loaded, else a terminal progress bar, else nothing. */
function display(spec: ClusterSpec, o: ResolvedFitOptions, dataset: Dataset, workers: number): FitWatch {
  const walk = new EpochWalk(dataset.size, o);
  const totalSteps = walk.total - walk.first;
  if (o.epochLines) return new EpochLines(o.epochs, o.validation !== undefined);
  const observer = installedFitObserver();
  if (o.progress !== false && observer) return observer.start({ totalSteps, workers, strategy: spec.strategy.name });
  if (o.progress ?? Boolean(process.stderr.isTTY)) return terminalWatch(totalSteps);
  return { step: () => undefined, end: () => undefined };
}

/** What a failed or stopped fit's error says of its end: a stop asked for, or an error (its first line). */
export function endOf(caught: unknown): FitEnd {
  const error = caught instanceof FitAborted ? caught.error : caught;
  if (error instanceof AbortError) return { by: "stop", reason: error.summary };
  const message =
    error instanceof MeshtrainError ? error.summary : error instanceof Error ? error.message : String(error);
  return { by: "error", error: message.split("\n")[0]! };
}
