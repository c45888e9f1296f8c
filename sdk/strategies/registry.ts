import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../data/dataset";
import type { RunRecord } from "../cluster/training-run";
import type { ModelSummary } from "../plan/model-summary";
import type { ClusterSpec, StrategyName } from "../spec/cluster-spec";
import type { ResolvedFitOptions } from "../spec/fit-options";
import { makeDisplayable } from "../viz/displayable";
import { planBundle } from "../viz/bundles";
import { fitDataParallel, type FitContext } from "./data/driver-runtime";
import { formatDataPlan, planDataParallel, type DataParallelPlan, type PlanOptions } from "./data/planner";

/** Every strategy's plan type; more join as strategies are added. */
export type Plan = DataParallelPlan;

export interface Strategy {
  readonly name: StrategyName;
  /** Pure: no sockets, no processes. */
  plan(spec: ClusterSpec, model: ModelSummary, options?: PlanOptions): Plan;
  format(plan: Plan): string;
  fit(ctx: FitContext, model: tf.LayersModel, dataset: Dataset, options: ResolvedFitOptions): Promise<RunRecord>;
}

/** The explicit registry: a strategy exists when it is listed here. */
export const STRATEGIES: Readonly<Record<StrategyName, Strategy>> = Object.freeze({
  data: {
    name: "data",
    plan: (spec, model, options) => withText(planDataParallel(spec, model, options), formatDataPlan),
    format: (plan) => formatDataPlan(plan),
    fit: fitDataParallel,
  },
});

/**
 * Plans stay plain data (JSON.stringify gives the data); non-enumerable methods make them print
 * as text and, in a notebook, draw as a placement diagram.
 */
function withText<P extends object>(plan: P, format: (p: P) => string): P {
  const copy = { ...plan };
  Object.defineProperty(copy, "toString", { value: () => format(copy), enumerable: false });
  return Object.freeze(makeDisplayable(copy, () => planBundle(copy as unknown as Plan), () => format(copy)));
}
