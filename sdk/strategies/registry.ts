import type { StrategyName } from "../config/cluster-spec";
import type { PlanData } from "../plan/plans";
import { autoStrategy } from "./auto/index";
import { dataStrategy } from "./data/index";
import { stagedStrategy } from "./pipeline/index";
import { psStrategy } from "./ps/index";
import type { Strategy } from "./strategy";

/**
 * Every strategy, by the name users give it: a strategy exists when it is listed here, and
 * nothing else in the SDK dispatches on a strategy's name.
 */
export const STRATEGIES: Readonly<Record<StrategyName, Strategy>> = Object.freeze({
  data: dataStrategy as Strategy,
  ps: psStrategy as Strategy,
  model: stagedStrategy as Strategy,
  pipeline: stagedStrategy as Strategy,
  hybrid: stagedStrategy as Strategy,
  auto: autoStrategy,
});

/** The strategy that runs a plan (auto's plans are data, pipeline or hybrid plans). */
export function strategyOf(plan: PlanData): Strategy {
  return STRATEGIES[plan.strategy];
}
