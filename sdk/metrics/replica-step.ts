import type { ReplicaStepChoice } from "../protocol/profile-messages";

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
