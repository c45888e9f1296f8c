import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../data/dataset";
import type { FitContext } from "../../driver/fit-context";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { fitRecovering } from "../../driver/recover-from-checkpoint";
import type { RunRecord } from "../../metrics/records";
import type { PipelinePlan, PlanMethods } from "../../plan/plans";
import { fitPipeline } from "./driver-runtime";

/**
 * Model, pipeline and hybrid fits on a cluster with spares (`.spares(n)`): a lost worker's place
 * is taken by a spare as the same rank (its stage), every stage is loaded again from this fit's
 * last checkpoint, and the steps since run again (driver/recover-from-checkpoint.ts).
 */
export function fitStagesRecovering(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  plan: PipelinePlan & PlanMethods,
): Promise<RunRecord> {
  return fitRecovering(ctx, model, dataset, o, (c, m, d, opts) => fitPipeline(c, m, d, opts, plan), {
    members: () => ctx.workers.slice(0, plan.worldSize),
    servers: false,
    takes: "a lost stage's place",
  });
}
