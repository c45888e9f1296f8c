import type { ModelSummary } from "../../plan/model-summary";
import type { ModelProfile } from "../../plan/profile";
import type { ReplicaWork, Speeds } from "../../plan/predict";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";

/**
 * Passes a sync makes over the weights without a profile to time them: read out, their change
 * (copied, negated, added, scaled), the non-finite check, set again, the outer update (about
 * four) and read back.
 */
const SYNC_PASSES = 12;

/**
 * A local-SGD / DiLoCo sync's own work, ms a sync: as the fit's profile timed it with this outer
 * optimizer, else from its passes over the weights at the workers' matrix speed (optimistic:
 * these passes run at memory's speed, far below it). Measured on the 11.4M MLP over loopback
 * (every 8 steps, SGD inside, outer Nesterov): about 40 ms a sync once warmed, a fit's first some
 * 110 ms more (80 of it its buffers' fresh pages, since made at load), which plans that priced a
 * sync by its bytes alone left out (they predicted it 1.27x faster than it ran).
 */
export function localSyncWork(
  model: ModelSummary,
  outer: OptimizerSpec,
  profile: ModelProfile | undefined,
  speeds: Speeds,
): ReplicaWork {
  const what = `a sync's own work (the weights' change and the outer ${outer.name} update)`;
  const timed = profile?.sum;
  if (
    timed?.ms !== undefined &&
    timed.spec.kind === "local" &&
    JSON.stringify(timed.spec.outer) === JSON.stringify(outer)
  )
    return { what, ms: timed.ms, timed: true };
  return { what, ms: ((SYNC_PASSES * model.trainableParamCount) / speeds.flopsPerSecond) * 1000, timed: false };
}

/**
 * What a replica does beside its steps, per step: its comm hook's work on each all-reduce (every
 * step, or with sync every H steps only at the syncs) and a sync's own work, as a share of the steps.
 */
export function replicaWork(
  model: ModelSummary,
  o: { hookWork: ReplicaWork | null; sync: { every: number; outer: OptimizerSpec } | null; syncShare: number },
  profile: ModelProfile | undefined,
  speeds: Speeds,
): ReplicaWork | undefined {
  const parts = [
    ...(o.hookWork ? [o.hookWork] : []),
    ...(o.sync ? [localSyncWork(model, o.sync.outer, profile, speeds)] : []),
  ];
  if (parts.length === 0) return undefined;
  const share = o.sync ? o.syncShare : 1;
  const every = o.sync ? ` over ${(1 / o.syncShare).toFixed(1)} steps a sync,` : "";
  return {
    what: `${parts.map((p) => p.what).join(" and ")}${every}`,
    ms: parts.reduce((a, p) => a + p.ms, 0) * share,
    timed: parts.every((p) => p.timed),
  };
}
