import type { z } from "zod";
import type { ClusterSpec } from "../../config/cluster-spec";
import type { PipelineKind, PipelinePlan, PlanData, PlanOptions } from "../../plan/plans";
import { measuredScheduleFigure } from "../../viz/schedule-timeline";
import { stagePlacementSvg } from "../../viz/stage-placement";
import type { RunNotes, Strategy } from "../strategy";
import { fitStagesRecovering } from "./stages-recovering";
import { pinStage } from "./placement";
import {
  explainPipelinePlan,
  formatPipelinePlan,
  planPipelineWith,
  stagedOptions,
  type PipelineOptions,
} from "./planner";
import type { ModelSummary } from "../../plan/model-summary";
import type { RunRecord } from "../../metrics/records";
import type { RunSummary } from "../../metrics/summary";
import {
  checkHybridOptions,
  checkOneStagePerWorker,
  HybridOptionsSchema,
  ModelOptionsSchema,
  PipelineOptionsSchema,
} from "./options";

function extras(
  o: PlanOptions,
): Pick<PipelineOptions, "batchSize" | "datasetSize" | "optimizer" | "devices" | "profile"> {
  return {
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    ...(o.datasetSize !== undefined ? { datasetSize: o.datasetSize } : {}),
    ...(o.optimizer ? { optimizer: o.optimizer } : {}),
    ...(o.devices ? { devices: o.devices } : {}),
    ...(o.profile ? { profile: o.profile } : {}),
  };
}

/** The same stages, replicas, schedule and placement as `plan`, for other options (a fit's batch). */
function replan(
  spec: ClusterSpec,
  model: ModelSummary,
  plan: PipelinePlan,
  o: PlanOptions,
  pinned?: ReadonlyMap<number, readonly [number, number]>,
): PipelinePlan {
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
function describe(run: RunRecord, plan: PipelinePlan, s: RunSummary): RunNotes {
  const slowest = s.workers.reduce((a, w) => (w.computeMs > a.computeMs ? w : a), s.workers[0]!);
  const stage = run.history[0]?.workers.find((w) => w.rank === slowest.rank)?.stage ?? 0;
  return {
    label: `${plan.strategy}, ${run.workers.length} worker(s)`,
    lines: slowest
      ? [
          `the slowest stage sets the pace: rank ${slowest.rank} (stage ${stage}), ${slowest.computeMs.toFixed(1)} ms of compute per step (median)`,
        ]
      : [],
    figures: () => [{ title: "Schedule as measured", figure: measuredScheduleFigure(run.history) }],
  };
}

type StagedOptionsGiven = {
  stages?: number | undefined;
  replicas?: number | undefined;
  microBatches?: number;
  schedule?: "gpipe" | "1f1b";
};

/**
 * Model ("model": one batch at a time), pipeline (micro-batches under a schedule) and hybrid
 * (replicated pipelines) parallelism: one planner, one runtime, one stage role; each kind its
 * own options.
 */
function staged<S extends z.ZodType<StagedOptionsGiven>>(
  kind: PipelineKind,
  options: S & z.ZodType<z.output<S>>,
  check: (o: z.output<S>, spec: ClusterSpec) => void,
): Strategy<z.output<S>, PipelinePlan> & { options: S } {
  return {
    options,
    family: "stages",
    servers: "refused",
    slowdown: false,
    spares: true,
    profiled: "layers",
    check,
    probesRing: () => false,
    plan: (o, spec, model, po) => planPipelineWith(model, { ...stagedOptions(kind, o, spec), ...extras(po) }),
    owns: (plan: PlanData): plan is PipelinePlan => plan.strategy === kind,
    replan: (_o, spec, model, plan, po, pinned) => replan(spec, model, plan, po, pinned),
    place: (plan, layers, rank) =>
      pinStage(new Map(plan.placed), layers, rank, {
        stages: plan.stages,
        worldSize: plan.worldSize,
        layers: plan.model.layers.length,
        cuts: plan.model.cuts,
      }),
    format: formatPipelinePlan,
    explain: explainPipelinePlan,
    draw: stagePlacementSvg,
    fit: fitStagesRecovering,
    describe,
    roles: ["stage"],
  };
}

export const modelStrategy = staged("model", ModelOptionsSchema, (o, spec) => checkOneStagePerWorker("model", o, spec));
export const pipelineStrategy = staged("pipeline", PipelineOptionsSchema, (o, spec) =>
  checkOneStagePerWorker("pipeline", o, spec),
);
export const hybridStrategy = staged("hybrid", HybridOptionsSchema, checkHybridOptions);
