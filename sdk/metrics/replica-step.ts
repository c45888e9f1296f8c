import type { ReplicaStepChoice } from "../protocol/profile-messages";
import type { SlowStep } from "../protocol/slow-step";

/** One choice for the run: native only when every replica ran the native step. */
export function replicaStepOf(reports: ReadonlyArray<ReplicaStepChoice | undefined>): ReplicaStepChoice | undefined {
  const known = reports.filter((r): r is ReplicaStepChoice => r !== undefined);
  if (known.length === 0) return undefined;
  const autodiff = known.find((r) => !r.native);
  return autodiff ? { native: false, why: autodiff.why ?? "a worker did not say why" } : { native: true };
}

export function replicaStepLine(c: ReplicaStepChoice): string {
  return c.native
    ? "replica step: meshtrain's native step on every worker (forward, loss and backward by native kernels, no autodiff tape)"
    : `replica step: TF.js autodiff, because ${c.why}`;
}

/** A worker's slice ran well below what its FLOPs predict: by how much, and where the time went. */
export function slowStepLine(s: SlowStep & { rank: number }): string {
  const total = s.top.reduce((a, t) => a + t.ms, 0) || 1;
  const where = s.top
    .slice(0, 5)
    .map((t) => `${t.name} ${((100 * t.ms) / total).toFixed(0)}%${t.count ? ` (x${t.count})` : ""}`)
    .join(", ");
  return `slow step: rank ${s.rank}'s slice computed in ${s.measuredMs.toFixed(1)} ms, ${(s.measuredMs / Math.max(s.predictedMs, 1e-9)).toFixed(1)}x what its FLOPs predict at the ${s.gflops.toFixed(1)} GFLOP/s it measured for a matrix product; the time went to ${s.by === "layers" ? "these layers" : "these TF.js kernels"}: ${where}`;
}
