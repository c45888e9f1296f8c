import { WorkerLostError } from "../../errors/errors";
import type { FitContext } from "../../driver/fit-context";
import type { StepRecord } from "../../metrics/records";
import { median } from "../../util/median";

/** `elastic: { evict }` as the plan holds it. */
export interface EvictRule {
  /** A worker whose compute takes more than this times the others' median... */
  slowerThan: number;
  /** ...for this many recorded steps in a row is let go. */
  steps: number;
}

/**
 * A step counts as slow only when it is also this much longer than the others' median: below it,
 * a worker's step time on a shared machine is noise (a GC pause, a neighbour's burst), not a slow
 * device.
 */
export const EVICT_FLOOR_MS = 10;
/** A worker's first steps after it joins are its warm-up (kernels compiled, buffers grown), never held against it. */
export const WARM_UP_STEPS = 2;

/**
 * Elastic fits with `evict`: the fit's onStep, which also watches each recorded step's compute
 * times and lets go a worker slower than the rule allows, as if it were lost (the loss's path:
 * fenced, its slice shared, its place taken by a spare or a new worker where the fit has them).
 * Never below `minWorkers`, and one at a time.
 */
export function evictingSlow(
  ctx: FitContext,
  rule: EvictRule,
  minWorkers: number,
  onStep: ((rec: StepRecord) => void) | undefined,
): (rec: StepRecord) => void {
  const streak = new Map<number, number>();
  const seen = new Map<number, number>();
  return (rec) => {
    onStep?.(rec);
    const ws = rec.workers;
    // A step whose members include one already lost (evicted or not) waits for the loop to re-form.
    const gone = (rank: number): boolean => ctx.workers.find((h) => h.rank === rank)?.lost !== undefined;
    if (ws.length < 2 || ws.length - 1 < minWorkers || ws.some((w) => gone(w.rank))) return;
    for (const w of ws) {
      seen.set(w.rank, (seen.get(w.rank) ?? 0) + 1);
      const others = median(ws.filter((o) => o !== w).map((o) => o.computeMs));
      const slow =
        (seen.get(w.rank) ?? 0) > WARM_UP_STEPS &&
        w.computeMs > rule.slowerThan * others &&
        w.computeMs - others > EVICT_FLOOR_MS;
      streak.set(w.rank, slow ? (streak.get(w.rank) ?? 0) + 1 : 0);
    }
    const [rank, n] = [...streak].sort((a, b) => b[1] - a[1])[0] ?? [0, 0];
    const h = ctx.workers.find((x) => x.rank === rank && !x.lost);
    if (n < rule.steps || !h) return;
    streak.clear();
    const w = ws.find((x) => x.rank === rank)!;
    const ratio = w.computeMs / median(ws.filter((o) => o !== w).map((o) => o.computeMs));
    h.markLost(
      new WorkerLostError(
        `${h.name} (${h.address}) was evicted at step ${rec.step}: its compute took more than ${rule.slowerThan}x the others' median for ${rule.steps} steps in a row (${ratio.toFixed(1)}x in the last)`,
        {
          details: { rank, step: rec.step },
          hint: "evict: { slowerThan } sets the bound; a spare (.spares(n)) or replace: true takes its place",
        },
      ),
    );
  };
}
