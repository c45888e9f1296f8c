import type { ClusterSpec } from "../config/cluster-spec";
import { workerCount } from "../config/cluster-spec";
import { ConfigError } from "../errors/errors";
import type { ModelSummary } from "../plan/model-summary";
import type { Plan, PlanData, PlanMethods, PlanOptions } from "../plan/plans";
import { planBundle } from "../viz/bundles";
import { makeDisplayable } from "../viz/displayable";
import { strategyNamed, strategyOf, strategyOfSpec } from "./strategy-table";

/** The plan `spec`'s strategy makes for `model`, printable, explainable, drawable and placeable. */
export function makePlan(spec: ClusterSpec, model: ModelSummary, options: PlanOptions): Plan {
  return decorate(spec, model, options, strategyOfSpec(spec).plan(spec, model, options));
}

/** The plan as text. */
export function formatPlan(plan: PlanData): string {
  return strategyOf(plan).format(plan);
}

function decorate(spec: ClusterSpec, model: ModelSummary, options: PlanOptions, data: PlanData): Plan {
  const copy = { ...data };
  const strategy = strategyOf(copy);
  const text = (): string => strategy.format(copy);
  const methods: PlanMethods = {
    explain: () => strategy.explain(copy),
    place: (layers, rank) =>
      decorate(spec, model, options, strategy.replan(spec, model, copy, options, strategy.place(copy, layers, rank))),
    draw: () => strategy.draw(copy),
    toString: text,
  };
  for (const [k, v] of Object.entries(methods)) Object.defineProperty(copy, k, { value: v, enumerable: false });
  const plan = copy as Plan;
  return Object.freeze(makeDisplayable(plan, () => planBundle(plan), text));
}

/**
 * The plan a fit runs: the one given in the fit's options (placed by hand, or made earlier) made
 * again for this fit's batch and optimizer, else the strategy's own. Checked against this cluster
 * and model, so a plan made for another cannot train the wrong thing.
 */
export function planForFit(
  spec: ClusterSpec,
  model: ModelSummary,
  options: PlanOptions,
  given: PlanData | undefined,
): Plan {
  if (!given) return makePlan(spec, model, options);
  const n = workerCount(spec);
  if (given.worldSize !== n) {
    throw new ConfigError(`the plan given to fit is for ${given.worldSize} workers; this cluster has ${n}`, {
      hint: "make the plan with this cluster's plan(model)",
    });
  }
  // Layer names differ between two builds of one architecture; the layers' kinds and shapes do not.
  const shape = (m: ModelSummary): string =>
    JSON.stringify(m.layers.map((l) => [l.className, l.params, l.outputShape]));
  if (shape(given.model) !== shape(model)) {
    throw new ConfigError(
      `the plan given to fit was made for a model with other layers ("${given.model.name}", ${given.model.layers.length} layers) than "${model.name}" (${model.layers.length} layers)`,
      {
        hint: "make the plan with plan(model) for the model you fit",
      },
    );
  }
  const family = strategyOfSpec(spec).family;
  if (family !== "any" && family !== strategyNamed(given.strategy).family) {
    throw new ConfigError(
      `the plan given to fit is a ${given.strategy} plan; this cluster's strategy is "${spec.strategy.name}"`,
    );
  }
  return decorate(spec, model, options, strategyOf(given).replan(spec, model, given, options));
}
