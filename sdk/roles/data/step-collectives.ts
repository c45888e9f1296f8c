import type { AllReduceStats } from "../../collectives/ring-allreduce";
import type { Collective } from "./step-result";

/** Collectives a step reports, at most (a deep model makes three per layer). */
const MAX_RECORDED = 4096;

/**
 * A ZeRO-2/3 step's collectives as the step reports them: the bytes each moved, when each ran
 * (ms from the step's start), and the time the step spent on them. A collective the step waited
 * for counts its own wait and transfer; one started ahead (overlap) ran while the step computed,
 * so only the time the step then waited for it counts.
 */
export class StepCollectives {
  stats: AllReduceStats = { waitMs: 0, commMs: 0, bytesSent: 0 };
  list: Collective[] = [];
  private began = 0;

  /** A new step begins. */
  restart(): void {
    this.stats = { waitMs: 0, commMs: 0, bytesSent: 0 };
    this.list = [];
    this.began = performance.now();
  }

  /** Milliseconds since the step began. */
  now(): number {
    return performance.now() - this.began;
  }

  /** A collective the step waited for, from `start` until now. */
  waited(s: AllReduceStats, what: Pick<Collective, "kind" | "layer" | "last">, start: number): void {
    this.record(what, start, this.now());
    this.stats.waitMs += s.waitMs;
    this.stats.commMs += s.commMs;
    this.stats.bytesSent += s.bytesSent;
  }

  /** A collective started ahead at `start`, ending now: it ran for its own wait and transfer, after those started before it. */
  ranAhead(s: AllReduceStats, what: Pick<Collective, "kind" | "layer" | "last">, start: number): void {
    const end = this.now();
    this.record(what, Math.max(start, end - s.waitMs - s.commMs), end);
    this.stats.bytesSent += s.bytesSent;
  }

  /** `p`, a collective started ahead, awaited: the time the step waited for it counts as communication. */
  async awaiting<T>(p: Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await p;
    } finally {
      this.stats.commMs += performance.now() - t0;
    }
  }

  private record(what: Pick<Collective, "kind" | "layer" | "last">, start: number, end: number): void {
    if (this.list.length < MAX_RECORDED)
      this.list.push({
        kind: what.kind,
        layer: what.layer,
        ...(what.last !== undefined ? { last: what.last } : {}),
        start,
        end,
      });
  }
}
