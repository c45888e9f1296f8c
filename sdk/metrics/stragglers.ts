import type { StepRecord } from "./records";
import { median } from "../util/median";

/** Who finished computing last in how many steps, and by how much: the worker the others waited for. */
export interface StragglerSummary {
  /** Steps in which each rank finished its forward and backward pass last. */
  stepsLast: Record<number, number>;
  /** The rank that was last most often, and in how many of the steps. */
  worst: { rank: number; steps: number; of: number } | null;
  /** Median of (last rank's end - the others' median end) over the steps, in ms. */
  medianLeadMs: number;
}

/** Which rank held the others back: per step, the rank whose compute ended last. */
export function stragglers(history: readonly StepRecord[]): StragglerSummary {
  const stepsLast: Record<number, number> = {};
  const leads: number[] = [];
  for (const s of history) {
    stepsLast[s.straggler] = (stepsLast[s.straggler] ?? 0) + 1;
    const ends = s.workers.map((w) => w.startMs + w.computeMs - w.applyMs);
    const last = Math.max(...ends);
    const others = ends.filter((_, i) => s.workers[i]!.rank !== s.straggler);
    if (others.length > 0) leads.push(last - median(others));
  }
  const entries = Object.entries(stepsLast).map(([r, n]) => ({ rank: Number(r), steps: n }));
  entries.sort((a, b) => b.steps - a.steps);
  const top = entries[0];
  return {
    stepsLast,
    worst: top && history[0] && history[0].workers.length > 1 ? { ...top, of: history.length } : null,
    medianLeadMs: median(leads),
  };
}
