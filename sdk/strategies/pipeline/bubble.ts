import type { WorkerStepRecord } from "../../metrics/records";

/**
 * The share of stage time spent idle in one step, measured: for each replica's pipeline, from
 * its first action's start to its last action's end (on the driver's clock), the time its S
 * stages were not running an action, over S times that span; averaged over replicas. Waiting for
 * a neighbour's activation or gradient, and its transfer, counts as idle, as it is.
 */
export function measuredBubble(recs: readonly WorkerStepRecord[], stages: number, replicas: number): number {
  let sum = 0;
  for (let r = 0; r < replicas; r++) {
    const mine = recs.filter((w) => w.replica === r);
    const spans = mine.flatMap((w) =>
      (w.actions ?? []).map((a) => ({ start: w.startMs + a.start, end: w.startMs + a.end })),
    );
    if (spans.length === 0) continue;
    const first = Math.min(...spans.map((a) => a.start));
    const last = Math.max(...spans.map((a) => a.end));
    const busy = spans.reduce((n, a) => n + a.end - a.start, 0);
    sum += last > first ? 1 - busy / (stages * (last - first)) : 0;
  }
  return sum / replicas;
}
