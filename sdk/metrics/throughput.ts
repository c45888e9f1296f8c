import type { StepRecord } from "./records";

/**
 * Steps left out at the start of a run when measuring speed: the first steps pay for
 * JIT compilation, memory allocation and filling the pipeline. min(3, floor(steps / 4)).
 */
export function defaultWarmup(steps: number): number {
  return Math.min(3, Math.floor(steps / 4));
}

/** throughput = samples / wall second over the steps after warm-up. */
export function throughput(history: readonly StepRecord[], warmupSteps = defaultWarmup(history.length)): number {
  const window = history.slice(warmupSteps);
  const ms = window.reduce((a, s) => a + s.ms, 0);
  const samples = window.reduce((a, s) => a + s.samples, 0);
  return ms > 0 ? (samples * 1000) / ms : 0;
}
