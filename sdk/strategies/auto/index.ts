import type { PlanData } from "../../plan/plans";
import { dataStrategy } from "../data/index";
import { stagedStrategy } from "../pipeline/index";
import type { Strategy } from "../strategy";
import { planAuto } from "./planner";

/** Auto plans with data parallelism or stages; the strategy whose plan it made runs it. */
function chosen(plan: PlanData): Strategy {
  return (plan.strategy === "data" ? dataStrategy : stagedStrategy) as Strategy;
}

/**
 * strategy("auto"): the planner picks data parallelism when the model fits every worker, else
 * the fewest stages that fit, replicated as the workers allow; everything after planning is the
 * chosen strategy's.
 */
export const autoStrategy: Strategy = {
  // Its plans are of whichever family it chose: a plan of either trains on an "auto" cluster.
  family: "any",
  plan: planAuto,
  replan: (spec, model, plan, o, pinned) => chosen(plan).replan(spec, model, plan, o, pinned),
  place: (plan, layers, rank) => chosen(plan).place(plan, layers, rank),
  format: (plan) => chosen(plan).format(plan),
  explain: (plan) => chosen(plan).explain(plan),
  draw: (plan) => chosen(plan).draw(plan),
  fit: (ctx, model, dataset, o, plan) => chosen(plan).fit(ctx, model, dataset, o, plan),
  describe: (run, summary) => chosen(run.plan).describe(run, summary),
  roles: {},
};
