import { ConfigError, MeshtrainError } from "../../errors/errors";
import { estimateReplicaMemory, formatBytes, memoryTotal } from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import { workerCount, type ClusterSpec } from "../../config/cluster-spec";
import { planDataParallel } from "../data/planner";
import { DataOptionsSchema } from "../data/options";
import type { AutoOptions } from "./options";
import { layerShardChoice, shardedChoice } from "./sharded-choice";
import { planPipelineWith, stageMemory } from "../pipeline/planner";
import type { DataParallelPlan, PlanOptions, PipelinePlan } from "../../plan/plans";

/** The batch auto plans for when none is given: fit's default. */
const DEFAULT_BATCH = 32;

/**
 * strategy("auto"): data parallelism when the whole model fits every worker (no idle stages, one
 * all-reduce per step); else ZeRO-1 when a 1/n share of the optimizer's state makes it fit
 * (sharded-choice.ts); otherwise the fewest stages whose split fits each worker's memory (fewer
 * stages mean a smaller bubble and more replicas), as a hybrid of workers / stages replicas when
 * that is 2 or more, else one pipeline; where no split fits, ZeRO-2 or -3 (layerShardChoice).
 * Every option it weighed goes into plan.explain().
 */
export function planAuto(given: AutoOptions, spec: ClusterSpec, model: ModelSummary, o: PlanOptions): DataParallelPlan | PipelinePlan {
  const { microBatches, schedule } = given;
  const n = workerCount(spec);
  const batch = o.batchSize ?? DEFAULT_BATCH;
  const batchNote = o.batchSize === undefined ? ` (no batch size given: planned for fit's default of ${DEFAULT_BATCH})` : "";
  const caps = Array.from({ length: n }, (_, rank) => stageMemory({ memoryCapBytes: spec.memoryCapBytes, devices: o.devices }, rank));
  const minCap = Math.min(...caps);
  const tightest = caps.indexOf(minCap);
  const e = estimateReplicaMemory(model, { batchSize: Math.ceil(batch / n), optimizer: o.optimizer });
  const whole = memoryTotal(e);
  const wholeText = `the whole model needs ${formatBytes(whole)} per replica (${formatBytes(e.paramsBytes)} parameters, ${formatBytes(e.gradientBytes)} gradients, ${formatBytes(e.optimizerBytes ?? 0)} optimizer state, ${formatBytes(e.activationBytes ?? 0)} activations for ${Math.ceil(batch / n)} samples)${batchNote}`;
  if (whole <= minCap) {
    const room = Number.isFinite(minCap) ? `every worker may use at least ${formatBytes(minCap)}` : "no worker reported a memory limit";
    return planDataParallel(DataOptionsSchema.parse({}), spec, model, {
      ...o,
      reasons: [`auto chose data parallelism: ${wholeText}, and ${room}; data parallelism leaves no stage idle and costs one all-reduce per step`],
    });
  }
  const tooBig = `${wholeText}, but worker ${tightest} may use only ${formatBytes(minCap)}`;
  const sharded = shardedChoice(e, model, n, minCap, o.optimizer);
  if (sharded.fits) return planDataParallel(DataOptionsSchema.parse({ shard: "optimizer" }), spec, model, { ...o, reasons: [tooBig, ...sharded.reasons] });
  const reasons = [tooBig, ...sharded.reasons, "so the model must be split into stages"];
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
        microBatches,
        schedule,
        batchSize: batch,
        ...(o.datasetSize !== undefined ? { datasetSize: o.datasetSize } : {}),
        ...(o.optimizer ? { optimizer: o.optimizer } : {}),
        ...(o.devices ? { devices: o.devices } : {}),
        ...(o.profile ? { profile: o.profile } : {}),
        ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
      });
      const biggest = Math.max(...plan.stagePlans.map((st) => st.stateBytes + st.activationBytes));
      const shape = replicas > 1 ? `a hybrid of ${replicas} replicas x ${stages} stages (each stage's ${replicas} replicas all-reduce their gradients)` : `one pipeline of ${stages} stages`;
      reasons.push(`${stages} stages fit: the largest stage needs ${formatBytes(biggest)} of ${formatBytes(minCap)}; auto chose ${shape}, the fewest stages that fit, for the smallest bubble`);
      return { ...plan, reasons };
    } catch (err) {
      if (!(err instanceof MeshtrainError)) throw err;
      reasons.push(`${stages} stages: ${err.summary}`);
    }
  }
  const layered = layerShardChoice(e, model, n, minCap, o);
  reasons.push(...layered.reasons);
  if (layered.shard) return planDataParallel(DataOptionsSchema.parse({ shard: layered.shard }), spec, model, { ...o, reasons });
  throw new ConfigError(`"${model.name}" does not fit on ${n} workers with the memory they have:\n  ${reasons.join("\n  ")}`, {
    hint: "add workers, raise .memory(), use a smaller batch, or more micro-batches",
  });
}
