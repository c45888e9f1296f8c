import type { ModelSummary } from "../../plan/model-summary";
import type { ModelProfile } from "../../plan/profile";
import type { ReplicaWork, Speeds } from "../../plan/predict";

/**
 * PowerSGD's own work in a replica's step: as the fit's profile timed it at this rank, else from
 * its FLOPs at the workers' matrix speed (optimistic: products of inner size r run far below it).
 * Per n x m gradient at rank r: P = M Q and Q = M^T P (2nmr each), P Q^T twice (the error and the
 * approximation), and the error added in and taken out (nm each). Measured on the 11.4M MLP at
 * rank 4 over loopback, leaving it out had predicted a 43.5 ms step that took 80.1.
 */
export function powerSgdWork(
  model: ModelSummary,
  rank: number,
  profile: ModelProfile | undefined,
  speeds: Speeds,
): ReplicaWork {
  const what = `PowerSGD's work at rank ${rank}`;
  const timed = profile?.hook;
  if (timed?.ms !== undefined && timed.spec.kind === "powersgd" && timed.spec.rank === rank)
    return { what, ms: timed.ms, timed: true };
  const flops = model.variables.reduce((a, v) => {
    if (v.shape.length < 2) return a;
    const size = v.shape.reduce((x, d) => x * d, 1);
    const m = v.shape[v.shape.length - 1]!;
    const r = Math.min(rank, size / m, m);
    return a + 8 * size * r + 2 * size;
  }, 0);
  return { what, ms: (flops / speeds.flopsPerSecond) * 1000, timed: false };
}
