import type { OverlapChoice } from "../../plan/overlap";
import type { DataPlaneChoice } from "../../protocol/data-plane";
import type { ReplicaStepChoice } from "../../protocol/profile-messages";
import type { OverlapTrialRecord } from "../../metrics/records";
import { TRIAL } from "./overlap-trial";

/** What a fit does where overlap "auto" could not tell. */
const TIMED =
  `a fit of ${TRIAL.minSteps} steps or more times its steps ${TRIAL.first}-${TRIAL.last} both ways, ` +
  "in buckets during the backward pass and once after it, and keeps the faster";

/** When the plan's all-reduce runs, said where the plan is explained. */
export function overlapLine(o: OverlapChoice): string {
  if (o.on && o.what) return `overlap: ${o.what}: ${o.why}`;
  if (o.on)
    return (
      "overlap: the gradient is all-reduced in buckets (1 MB, then 25 MB, as DDP's) that start while the backward " +
      `pass computes earlier layers, on the native data plane with the native step: ${o.why}`
    );
  const timed = o.timed ? `; ${TIMED}` : "";
  return `no overlap: ${o.instead ?? "one all-reduce after the backward pass"}: ${o.why}${timed}`;
}

/**
 * When the run's all-reduces ran: as the fit timed it, or the plan's choice unless the data plane
 * or the replica step could not overlap.
 */
export function runOverlapLine(
  o: OverlapChoice,
  plane: DataPlaneChoice | undefined,
  step: ReplicaStepChoice | undefined,
  trial?: OverlapTrialRecord,
): string {
  if (trial) return trialLine(o, trial);
  if (o.timed) return overlapLine({ on: false, why: o.why });
  if (!o.on || o.what) return overlapLine(o);
  if (plane?.path !== "native")
    return "no overlap: the WebSocket data plane all-reduces the whole gradient after the backward pass";
  if (step?.native !== true)
    return "no overlap: TF.js's autodiff hands over every gradient at once, after the backward pass";
  return `overlap: the gradient was all-reduced in buckets that started during the backward pass (a gradient under 1 MB goes in one): ${o.why}`;
}

/** What the fit's timing of both ways found, and what it kept. */
function trialLine(o: OverlapChoice, t: OverlapTrialRecord): string {
  if ("skipped" in t) return `no overlap: one all-reduce after the backward pass: ${o.why}; ${t.skipped}`;
  if ("refused" in t) return `no overlap: one all-reduce after the backward pass: ${t.refused}`;
  const ways =
    `in buckets during the backward pass ${t.onMs.toFixed(1)} ms a step, one all-reduce after it ` +
    `${t.offMs.toFixed(1)} ms (each way's median on the slower replica, steps ${t.steps[0]}-${t.steps[1]} alternating)`;
  const pct = `${Math.round((TRIAL.margin - 1) * 100)}%`;
  const from = t.from !== undefined ? ` from step ${t.from}` : " (no step was left to run it)";
  return t.kept
    ? `overlap: timed both ways, ${ways}: buckets kept${from}, the faster by ${pct} or more`
    : `no overlap: timed both ways, ${ways}: one all-reduce after the backward pass kept${from}, buckets not ${pct} faster (${o.why})`;
}
