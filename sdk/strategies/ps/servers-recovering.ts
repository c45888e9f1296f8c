import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../data/dataset";
import type { FitContext } from "../../driver/fit-context";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { fitRecovering } from "../../driver/recover-from-checkpoint";
import type { RunRecord } from "../../metrics/records";
import type { PlanMethods, PsPlan } from "../../plan/plans";
import { fitParameterServers } from "./driver-runtime";

/**
 * Sync parameter servers on a cluster with spares (`.spares(n)`): a lost server's place is taken
 * by a spare as the same server (its shard), and so is a lost worker's unless the fit is elastic
 * (then the others take its slices); every server and worker is loaded again from this fit's
 * last checkpoint and the steps since run again (driver/recover-from-checkpoint.ts).
 */
export function fitServersRecovering(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  plan: PsPlan & PlanMethods,
): Promise<RunRecord> {
  return fitRecovering(ctx, model, dataset, o, (c, m, d, opts) => fitParameterServers(c, m, d, opts, plan), {
    members: () => [...ctx.servers, ...(plan.elastic ? [] : ctx.workers)],
    servers: true,
    takes: plan.elastic ? "a lost server's place" : "a lost server's or worker's place",
  });
}
