import { MeshtrainError } from "../../errors/errors";
import { formatBytes } from "../../plan/memory";
import { stageNeedBytes } from "../../plan/partition";
import type { ModelSummary } from "../../plan/model-summary";
import type { ClusterSpec } from "../../config/cluster-spec";
import type { AutoOptions } from "./options";
import { planPipelineWith } from "../pipeline/planner";
import type { PlanOptions, PipelinePlan } from "../../plan/plans";

/** How a staged plan reads in auto's reasons: one pipeline, or a hybrid of its replicas. */
export function stagedShape(plan: PipelinePlan): string {
  return plan.replicas > 1
    ? `a hybrid of ${plan.replicas} replicas x ${plan.stages} stages`
    : `one pipeline of ${plan.stages} stages`;
}

/**
 * The fewest stages whose split fits each worker's memory (fewer stages mean a smaller bubble and
 * more replicas), as a hybrid of workers / stages replicas when that is 2 or more, else one
 * pipeline; null where no split fits. Each count it tried goes into `reasons`.
 */
export function fewestStages(
  given: AutoOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  o: PlanOptions & { batchSize: number },
  n: number,
  minCap: number,
  reasons: string[],
): PipelinePlan | null {
  for (let stages = 2; stages <= Math.min(n, model.layers.length); stages++) {
    if (n % stages !== 0) {
      reasons.push(`${stages} stages: skipped, ${n} workers do not form whole replicas of ${stages} stages`);
      continue;
    }
    const replicas = n / stages;
    try {
      const plan = planPipelineWith(model, {
        kind: replicas > 1 ? "hybrid" : "pipeline",
        stages,
        replicas,
        microBatches: given.microBatches,
        schedule: given.schedule,
        batchSize: o.batchSize,
        ...(o.datasetSize !== undefined ? { datasetSize: o.datasetSize } : {}),
        ...(o.optimizer ? { optimizer: o.optimizer } : {}),
        ...(o.devices ? { devices: o.devices } : {}),
        ...(o.profile ? { profile: o.profile } : {}),
        ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
      });
      const biggest = Math.max(...plan.stagePlans.map(stageNeedBytes));
      const allReduce = replicas > 1 ? ` (each stage's ${replicas} replicas all-reduce their gradients)` : "";
      reasons.push(
        `${stages} stages fit: the largest stage needs ${formatBytes(biggest)} of ${formatBytes(minCap)}; ${stagedShape(plan)}${allReduce} is the fewest stages that fit, for the smallest bubble`,
      );
      return plan;
    } catch (err) {
      if (!(err instanceof MeshtrainError)) throw err;
      reasons.push(`${stages} stages: ${err.summary}`);
    }
  }
  return null;
}
