import type { StepRecord } from "./records";

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
  /** The fit ended; `error` when it failed. The run's own display comes after. */
  end(error?: unknown): void;
}

export interface FitObserver {
  start(info: FitStart): FitWatch;
}

export function installedFitObserver(): FitObserver | undefined {
  return (globalThis as Record<symbol, FitObserver | undefined>)[FIT_OBSERVER];
}
