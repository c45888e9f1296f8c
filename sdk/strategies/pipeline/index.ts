import type { ClusterSpec } from "../../config/cluster-spec";
import type { PipelinePlan, PlanOptions } from "../../plan/plans";
import { measuredScheduleFigure } from "../../viz/schedule-timeline";
import { stagePlacementSvg } from "../../viz/stage-placement";
import type { RunNotes, Strategy } from "../strategy";
import { fitPipeline } from "./driver-runtime";
import { pinStage } from "./placement";
import { explainPipelinePlan, formatPipelinePlan, pipelineOptionsFromSpec, planPipelineWith, type PipelineOptions } from "./planner";
import { StageRuntime } from "./stage-role";
import type { ModelSummary } from "../../plan/model-summary";
import type { RunRecord } from "../../metrics/records";
import type { RunSummary } from "../../metrics/summary";

function extras(o: PlanOptions): Pick<PipelineOptions, "batchSize" | "optimizer" | "devices" | "profile"> {
  return { ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}), ...(o.optimizer ? { optimizer: o.optimizer } : {}), ...(o.devices ? { devices: o.devices } : {}), ...(o.profile ? { profile: o.profile } : {}) };
}

/** The same stages, replicas, schedule and placement as `plan`, for other options (a fit's batch). */
function replan(spec: ClusterSpec, model: ModelSummary, plan: PipelinePlan, o: PlanOptions, pinned?: ReadonlyMap<number, readonly [number, number]>): PipelinePlan {
  return planPipelineWith(model, {
    kind: plan.strategy,
    stages: plan.stages,
    replicas: plan.replicas,
    microBatches: plan.microBatches,
    schedule: plan.schedule.name,
    pinned: pinned ?? new Map(plan.placed),
    reasons: plan.reasons,
    ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
    ...extras(o),
  });
}

/** In a pipeline every stage waits for the slowest one: it, not the last to finish, sets the pace. */
function describe(run: RunRecord, s: RunSummary): RunNotes {
  const slowest = s.workers.reduce((a, w) => (w.computeMs > a.computeMs ? w : a), s.workers[0]!);
  const stage = run.history[0]?.workers.find((w) => w.rank === slowest.rank)?.stage ?? 0;
  return {
    label: `${run.plan.strategy}, ${run.workers.length} worker(s)`,
    lines: slowest ? [`the slowest stage sets the pace: rank ${slowest.rank} (stage ${stage}), ${slowest.computeMs.toFixed(1)} ms of compute per step (median)`] : [],
    figures: () => [{ title: "Schedule as measured", figure: measuredScheduleFigure(run.history) }],
  };
}

/**
 * Model ("model": one batch at a time), pipeline (micro-batches under a schedule) and hybrid
 * (replicated pipelines) parallelism: one planner, one runtime, one stage role; the cluster
 * spec's strategy says which shape to plan.
 */
export const stagedStrategy: Strategy<PipelinePlan> = {
  family: "stages",
  plan: (spec, model, o) => planPipelineWith(model, { ...pipelineOptionsFromSpec(spec), ...extras(o) }),
  replan,
  place: (plan, layers, rank) => pinStage(new Map(plan.placed), layers, rank, { stages: plan.stages, worldSize: plan.worldSize, layers: plan.model.layers.length }),
  format: formatPipelinePlan,
  explain: explainPipelinePlan,
  draw: stagePlacementSvg,
  fit: fitPipeline,
  describe,
  roles: { stage: (msg, attachments, env) => StageRuntime.load(msg, attachments, env) },
};
