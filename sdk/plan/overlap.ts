import { machinesOf } from "./machines";

/** Whether a data-parallel step all-reduces its gradient in buckets during the backward pass, and why. */
export interface OverlapChoice {
  readonly on: boolean;
  readonly why: string;
  /** Off: when the step's communication runs instead (default: one all-reduce after the backward pass). */
  readonly instead?: string;
  /** On: what runs during the passes (default: the gradient's all-reduce, in buckets). */
  readonly what?: string;
  /**
   * The rule could not tell (no core to spare): the fit times its first steps both ways and keeps
   * the faster (driver/overlap-trial.ts); `on` is what it starts with and what plans price.
   */
  readonly timed?: true;
}

/**
 * Overlap as asked (`true`, `false`), or for "auto": on where every machine has a core to spare
 * for the all-reduce's thread. Where a machine's cores are all computing, the thread takes its CPU
 * from the backward pass it was meant to hide behind: on 2 cores, bench:scaling's 2 workers
 * trained the 11.4M MLP (the one whose gradient spans several buckets) 1-13% slower with overlap
 * than with one all-reduce after the backward pass, in all four runs on two machines.
 * Without the workers' machines known (a plan made before launch) it stays on, as DDP's default.
 */
export function chooseOverlap(
  asked: "auto" | boolean,
  workers: number,
  devices: ReadonlyArray<{ host?: string; cpus?: number }> | undefined,
): OverlapChoice {
  if (workers < 2) return { on: false, why: "one worker: no all-reduce" };
  if (asked === true) return { on: true, why: "asked for with overlap: true" };
  if (asked === false) return { on: false, why: "asked for with overlap: false" };
  const crowded = machinesOf(devices ?? []).filter((m) => m.workers >= m.cpus);
  if (crowded.length > 0) {
    const which = crowded.map((m) => `${m.workers} on ${m.host}'s ${m.cpus} core(s)`).join(", ");
    return {
      on: false,
      why: `no core to spare for the all-reduce's thread (${which}): it would slow the backward pass more than it hides; overlap: true asks for it anyway`,
    };
  }
  if (!devices || devices.length === 0)
    return {
      on: true,
      why: "the workers' machines are not known before launch; a launched cluster's fit decides from them",
    };
  if (devices.some((d) => d.host === undefined || !(d.cpus! > 0)))
    return { on: true, why: "not every worker said which machine it runs on (DDP's default)" };
  return { on: true, why: "every worker's machine has a core to spare for the all-reduce's thread" };
}
