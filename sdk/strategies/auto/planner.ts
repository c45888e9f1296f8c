import { ConfigError } from "../../errors/errors";
import {
  estimateParts,
  estimateReplicaMemory,
  formatBytes,
  memoryTotal,
  zeroStage,
  type MemoryEstimate,
} from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import { workerCount, type ClusterSpec } from "../../config/cluster-spec";
import { planDataParallel } from "../data/planner";
import { DataOptionsSchema } from "../data/options";
import type { AutoOptions } from "./options";
import { layerShardChoice, shardedChoice } from "./sharded-choice";
import { stageMemory } from "../pipeline/planner";
import { fewestStages, stagedShape } from "./stage-choice";
import { fasterOf } from "./rank";
import type { DataParallelPlan, PlanOptions, PipelinePlan } from "../../plan/plans";

/** The batch auto plans for when none is given: fit's default. */
const DEFAULT_BATCH = 32;

/**
 * strategy("auto"): data parallelism when the whole model fits every worker (no idle stages, one
 * all-reduce per step); else ZeRO-1 when a 1/n share of the optimizer's state makes it fit
 * (sharded-choice.ts); otherwise the fewest stages whose split fits (stage-choice.ts) or ZeRO-2,
 * else -3, where they fit (layerShardChoice): where both fit, the one predicted faster (rank.ts).
 * Every option it weighed goes into plan.explain().
 */
export function planAuto(
  given: AutoOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  o: PlanOptions,
): DataParallelPlan | PipelinePlan {
  const n = workerCount(spec);
  const batch = o.batchSize ?? DEFAULT_BATCH;
  const batchNote =
    o.batchSize === undefined ? ` (no batch size given: planned for fit's default of ${DEFAULT_BATCH})` : "";
  const caps = Array.from({ length: n }, (_, rank) =>
    stageMemory({ memoryCapBytes: spec.memoryCapBytes, devices: o.devices }, rank),
  );
  const minCap = Math.min(...caps);
  const tightest = caps.indexOf(minCap);
  const e = estimateReplicaMemory(model, {
    batchSize: Math.ceil(batch / n),
    optimizer: o.optimizer,
    native: o.nativeMemory,
  });
  const whole = memoryTotal(e);
  const wholeText = `the whole model needs ${formatBytes(whole)} per replica (${estimateParts(e, Math.ceil(batch / n))})${batchNote}`;
  if (whole <= minCap) {
    const room = Number.isFinite(minCap)
      ? `every worker may use at least ${formatBytes(minCap)}`
      : "no worker reported a memory limit";
    return planDataParallel(DataOptionsSchema.parse({}), spec, model, {
      ...o,
      reasons: [
        `auto chose data parallelism: ${wholeText}, and ${room}; data parallelism leaves no stage idle and costs one all-reduce per step`,
      ],
    });
  }
  const tooBig = `${wholeText}, but worker ${tightest} may use only ${formatBytes(minCap)}`;
  const sharded = shardedChoice(e, model, n, minCap, o.optimizer);
  if (sharded.fits)
    return planDataParallel(DataOptionsSchema.parse({ shard: "optimizer" }), spec, model, {
      ...o,
      reasons: [tooBig, ...sharded.reasons],
    });
  const reasons = [
    tooBig,
    ...sharded.reasons,
    "so the model must be split into stages, or each layer sharded (ZeRO-2, -3)",
  ];
  return planSplit(given, spec, model, o, batch, e, minCap, reasons);
}

/**
 * Where not even ZeRO-1's share fits: the fewest stages whose split fits, or ZeRO-2 or -3 where
 * they fit, the one predicted faster where both do; what it weighed is added to `reasons`.
 */
function planSplit(
  given: AutoOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  o: PlanOptions,
  batch: number,
  e: MemoryEstimate,
  minCap: number,
  reasons: string[],
): DataParallelPlan | PipelinePlan {
  const n = workerCount(spec);
  const staged = fewestStages(given, spec, model, { ...o, batchSize: batch }, n, minCap, reasons);
  const layered = layerShardChoice(e, model, n, minCap, o);
  reasons.push(...layered.reasons);
  const zero = layered.shard
    ? planDataParallel(
        DataOptionsSchema.parse({
          shard: layered.shard,
          overlap: false,
          ...(layered.bucketMB !== undefined ? { bucketMB: layered.bucketMB } : {}),
        }),
        spec,
        model,
        { ...o, batchSize: batch },
      )
    : null;
  if (staged && zero) return fasterOf(staged, zero, reasons);
  if (staged) return { ...staged, reasons: [...reasons, `auto chose ${stagedShape(staged)}`] };
  if (zero)
    return {
      ...zero,
      reasons: [...reasons, `no split into stages fits: auto chose ZeRO-${zeroStage(layered.shard!)}`],
    };
  throw new ConfigError(
    `"${model.name}" does not fit on ${n} workers with the memory they have:\n  ${reasons.join("\n  ")}`,
    {
      hint: "add workers, raise .memory(), use a smaller batch, or more micro-batches",
    },
  );
}
