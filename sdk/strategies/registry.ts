import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../data/dataset";
import type { TrainingRun } from "../metrics/run";
import type { ModelSummary } from "../plan/model-summary";
import type { ClusterSpec, StrategyName } from "../spec/cluster-spec";
import type { ResolvedFitOptions } from "../spec/fit-options";
import { fitDataParallel, type FitContext } from "./data/driver-runtime";
import { formatDataPlan, planDataParallel, type DataParallelPlan } from "./data/planner";

/** Every strategy's plan type; more join as strategies are added. */
export type Plan = DataParallelPlan;

export interface Strategy {
  readonly name: StrategyName;
  /** Pure: no sockets, no processes. */
  plan(spec: ClusterSpec, model: ModelSummary, batchSize?: number): Plan;
  format(plan: Plan): string;
  fit(ctx: FitContext, model: tf.LayersModel, dataset: Dataset, options: ResolvedFitOptions): Promise<TrainingRun>;
}

/** The explicit registry: a strategy exists when it is listed here. */
export const STRATEGIES: Readonly<Record<StrategyName, Strategy>> = Object.freeze({
  data: {
    name: "data",
    plan: (spec, model, batchSize) => withText(planDataParallel(spec, model, batchSize), formatDataPlan),
    format: (plan) => formatDataPlan(plan),
    fit: fitDataParallel,
  },
});

/** Plans stay plain data; a non-enumerable toString makes them print as text. */
function withText<P extends object>(plan: P, format: (p: P) => string): P {
  const copy = { ...plan };
  Object.defineProperty(copy, "toString", { value: () => format(copy), enumerable: false });
  return Object.freeze(copy);
}
