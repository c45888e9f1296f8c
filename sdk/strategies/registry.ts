import type * as tf from "@tensorflow/tfjs";
import type { RunRecord } from "../cluster/training-run";
import type { Dataset } from "../data/dataset";
import { ConfigError } from "../errors/errors";
import type { ModelSummary } from "../plan/model-summary";
import type { ClusterSpec, StrategyName } from "../config/cluster-spec";
import { workerCount } from "../config/cluster-spec";
import type { ResolvedFitOptions } from "../config/fit-options";
import { makeDisplayable } from "../viz/displayable";
import { planBundle } from "../viz/bundles";
import { planAuto } from "./auto/planner";
import { fitDataParallel } from "./data/driver-runtime";
import { explainDataPlan, formatDataPlan, planDataParallel, type DataParallelPlan, type PlanOptions } from "./data/planner";
import type { FitContext } from "./fit-common";
import { fitPipeline } from "./pipeline/driver-runtime";
import { pinStage } from "./pipeline/placement";
import { explainPipelinePlan, formatPipelinePlan, pipelineOptionsFromSpec, planPipelineWith, type PipelineOptions, type PipelinePlan } from "./pipeline/planner";
import { fitParameterServers } from "./ps/driver-runtime";
import { explainPsPlan, formatPsPlan, planParameterServers, type PsPlan } from "./ps/planner";

/** A plan as data: who holds which layers, how the batch is split, what it should cost. */
export type PlanData = DataParallelPlan | PsPlan | PipelinePlan;

export interface PlanMethods {
  /** Why the plan is what it is: the choices made, with their numbers. */
  explain(): string;
  /**
   * Pins layers [from, to) to the stage that worker `rank` runs (in a hybrid, every replica of
   * that stage); the partitioner splits the other layers around it. Returns a new plan; pass it
   * to fit as `{ plan }`. Only model, pipeline and hybrid plans have stages to place.
   */
  place(layers: readonly [number, number], rank: number): Plan;
  toString(): string;
}

/** What plan() returns: plain data (JSON.stringify gives the data) with non-enumerable methods. */
export type Plan = PlanData & PlanMethods;

export interface Strategy {
  readonly name: StrategyName;
  /** Pure: no sockets, no processes. */
  plan(spec: ClusterSpec, model: ModelSummary, options: PlanOptions): PlanData;
}

function pipelineStrategy(name: "model" | "pipeline" | "hybrid"): Strategy {
  return {
    name,
    plan: (spec, model, o) => planPipelineWith(model, { ...pipelineOptionsFromSpec(spec), ...pipelineExtras(o) }),
  };
}

/** The explicit registry: a strategy exists when it is listed here. */
export const STRATEGIES: Readonly<Record<StrategyName, Strategy>> = Object.freeze({
  data: { name: "data", plan: (spec, model, o) => planDataParallel(spec, model, o) },
  ps: { name: "ps", plan: (spec, model, o) => planParameterServers(spec, model, o) },
  model: pipelineStrategy("model"),
  pipeline: pipelineStrategy("pipeline"),
  hybrid: pipelineStrategy("hybrid"),
  auto: { name: "auto", plan: (spec, model, o) => planAuto(spec, model, o) },
});

function pipelineExtras(o: PlanOptions): Pick<PipelineOptions, "batchSize" | "optimizer" | "devices"> {
  return { ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}), ...(o.optimizer ? { optimizer: o.optimizer } : {}), ...(o.devices ? { devices: o.devices } : {}) };
}

/** The same stages, replicas, schedule and placement as `plan`, for other options (a fit's batch). */
function replanLike(spec: ClusterSpec, model: ModelSummary, plan: PlanData, o: PlanOptions, pinned?: ReadonlyMap<number, readonly [number, number]>): PlanData {
  if (plan.strategy === "data") return planDataParallel(spec, model, { ...o, reasons: plan.reasons });
  if (plan.strategy === "ps") return planParameterServers(spec, model, { ...o, reasons: plan.reasons });
  return planPipelineWith(model, {
    kind: plan.strategy,
    stages: plan.stages,
    replicas: plan.replicas,
    microBatches: plan.microBatches,
    schedule: plan.schedule.name,
    pinned: pinned ?? new Map(plan.placed),
    reasons: plan.reasons,
    ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
    ...pipelineExtras(o),
  });
}

/** The plan `spec`'s strategy makes for `model`, printable, explainable and placeable. */
export function makePlan(spec: ClusterSpec, model: ModelSummary, options: PlanOptions): Plan {
  return decorate(spec, model, options, STRATEGIES[spec.strategy.name].plan(spec, model, options));
}

/** The plan as text. */
export function formatPlan(plan: PlanData): string {
  return plan.strategy === "data" ? formatDataPlan(plan) : plan.strategy === "ps" ? formatPsPlan(plan) : formatPipelinePlan(plan);
}

function decorate(spec: ClusterSpec, model: ModelSummary, options: PlanOptions, data: PlanData): Plan {
  const copy = { ...data };
  const text = (): string => formatPlan(copy);
  const methods: PlanMethods = {
    explain: () => (copy.strategy === "data" ? explainDataPlan(copy) : copy.strategy === "ps" ? explainPsPlan(copy) : explainPipelinePlan(copy)),
    place: (layers, rank) => {
      if (copy.strategy === "data" || copy.strategy === "ps") {
        throw new ConfigError(`place() splits layers over stages, but under ${copy.strategy === "data" ? "data parallelism" : "parameter servers"} every worker holds all layers`, {
          hint: 'use strategy("model"), ("pipeline") or ("hybrid", { stages }) to place layers on workers',
        });
      }
      const pinned = pinStage(new Map(copy.placed), layers, rank, { stages: copy.stages, worldSize: copy.worldSize, layers: model.layers.length });
      return decorate(spec, model, options, replanLike(spec, model, copy, options, pinned));
    },
    toString: text,
  };
  for (const [k, v] of Object.entries(methods)) Object.defineProperty(copy, k, { value: v, enumerable: false });
  return Object.freeze(makeDisplayable(copy, () => planBundle(copy), text)) as Plan;
}

/**
 * The plan a fit runs: the one given in the fit's options (placed by hand, or made earlier) made
 * again for this fit's batch and optimizer, else the strategy's own. Checked against this cluster
 * and model, so a plan made for another cannot train the wrong thing.
 */
export function planForFit(spec: ClusterSpec, model: ModelSummary, options: PlanOptions, given: PlanData | undefined): Plan {
  if (!given) return makePlan(spec, model, options);
  const n = workerCount(spec);
  if (given.worldSize !== n) {
    throw new ConfigError(`the plan given to fit is for ${given.worldSize} workers; this cluster has ${n}`, { hint: "make the plan with this cluster's plan(model)" });
  }
  // Layer names differ between two builds of one architecture; the layers' kinds and shapes do not.
  const shape = (m: ModelSummary): string => JSON.stringify(m.layers.map((l) => [l.className, l.params, l.outputShape]));
  if (shape(given.model) !== shape(model)) {
    throw new ConfigError(`the plan given to fit was made for a model with other layers ("${given.model.name}", ${given.model.layers.length} layers) than "${model.name}" (${model.layers.length} layers)`, {
      hint: "make the plan with plan(model) for the model you fit",
    });
  }
  const family = (s: string): string => (s === "data" || s === "ps" ? s : "stages");
  if (spec.strategy.name !== "auto" && family(spec.strategy.name) !== family(given.strategy)) {
    throw new ConfigError(`the plan given to fit is a ${given.strategy} plan; this cluster's strategy is "${spec.strategy.name}"`);
  }
  return decorate(spec, model, options, replanLike(spec, model, given, options));
}

/** Trains with the plan's strategy: data parallelism, parameter servers, or stages (model, pipeline, hybrid). */
export function fitWithPlan(ctx: FitContext, model: tf.LayersModel, dataset: Dataset, o: ResolvedFitOptions, plan: Plan): Promise<RunRecord> {
  if (plan.strategy === "data") return fitDataParallel(ctx, model, dataset, o, plan);
  if (plan.strategy === "ps") return fitParameterServers(ctx, model, dataset, o, plan);
  return fitPipeline(ctx, model, dataset, o, plan);
}
