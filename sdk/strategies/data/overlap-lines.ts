import type { OverlapChoice } from "../../plan/overlap";
import type { DataPlaneChoice } from "../../protocol/data-plane";
import type { ReplicaStepChoice } from "../../protocol/profile-messages";

/** When the plan's all-reduce runs, said where the plan is explained. */
export function overlapLine(o: OverlapChoice): string {
  if (o.on && o.what) return `overlap: ${o.what}: ${o.why}`;
  return o.on
    ? `overlap: the gradient is all-reduced in buckets (1 MB, then 25 MB, as DDP's) that start while the backward pass computes earlier layers, on the native data plane with the native step: ${o.why}`
    : `no overlap: ${o.instead ?? "one all-reduce after the backward pass"}: ${o.why}`;
}

/** When the run's all-reduces ran: the plan's choice, unless the data plane or the replica step could not overlap. */
export function runOverlapLine(
  o: OverlapChoice,
  plane: DataPlaneChoice | undefined,
  step: ReplicaStepChoice | undefined,
): string {
  if (!o.on || o.what) return overlapLine(o);
  if (plane?.path !== "native")
    return "no overlap: the WebSocket data plane all-reduces the whole gradient after the backward pass";
  if (step?.native !== true)
    return "no overlap: TF.js's autodiff hands over every gradient at once, after the backward pass";
  return `overlap: the gradient was all-reduced in buckets that started during the backward pass (a gradient under 1 MB goes in one): ${o.why}`;
}
