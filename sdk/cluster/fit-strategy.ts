import type { ClusterSpec } from "../config/cluster-spec";
import type { FitStrategy } from "../driver/fit";
import { planForFit } from "../strategies/make-plan";
import { strategyOf, strategyOfSpec } from "../strategies/strategy-table";

/** The cluster's strategy as a fit uses it: planning (a given plan made again for this fit), the plan's probes, and the runtime of the strategy that owns the plan. */
export function fitStrategyOf(spec: ClusterSpec): FitStrategy {
  return {
    profiled: strategyOfSpec(spec).profiled,
    plan: (model, options, given) => planForFit(spec, model, options, given),
    probes: (plan) => strategyOf(plan).probes(plan),
    fit: (ctx, model, dataset, o, plan) => strategyOf(plan).fit(ctx, model, dataset, o, plan),
  };
}
