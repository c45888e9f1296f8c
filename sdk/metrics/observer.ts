import type { FitEnd, StepRecord } from "./records";

/**
 * Who watches a fit while it runs: the notebook integration (a live plot) when it is loaded,
 * else a progress bar on a terminal. The notebook side installs itself on globalThis under a
 * Symbol.for key, so the SDK never imports notebook code and a re-run cell replaces it.
 */
export const FIT_OBSERVER = Symbol.for("meshtrain.fitObserver");

export interface FitStart {
  totalSteps: number;
  workers: number;
  strategy: string;
}

export interface FitWatch {
  step(record: StepRecord): void;
  /** The fit ended, as `how` says (done, a callback, a stop asked for, an error). The run's own display comes after. */
  end(how: FitEnd): void;
}

export interface FitObserver {
  start(info: FitStart): FitWatch;
}

export function installedFitObserver(): FitObserver | undefined {
  return (globalThis as Record<symbol, FitObserver | undefined>)[FIT_OBSERVER];
}
