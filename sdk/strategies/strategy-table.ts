import type { z } from "zod";
import { serverCount, workerCount, type ClusterSpec } from "../config/cluster-spec";
import { parseOrThrow } from "../config/zod-problem";
import { ConfigError, StateError } from "../errors/errors";
import type { PlanData } from "../plan/plans";
import { autoStrategy } from "./auto/index";
import { dataStrategy } from "./data/index";
import { hybridStrategy, modelStrategy, pipelineStrategy } from "./pipeline/index";
import { psStrategy } from "./ps/index";
import type { Strategy, StrategyPlanner } from "./strategy";
import type { StrategyEntry, StrategyRunnerEntry } from "./strategy-entry";
import type { StrategyOptionsByName } from "./strategy-options";

export type { StrategyEntry, StrategyRunnerEntry } from "./strategy-entry";

/** One line of the table: a strategy, its option and plan types closed over. */
interface Line<I> {
  make(name: string): StrategyEntry;
  /** The options strategy(name, options) accepts, for the builder's types (never set). */
  readonly input?: I;
}

/** A strategy that plans and runs its plans. */
function runs<S extends z.ZodType<object>, P extends PlanData>(
  s: Strategy<z.output<S>, P> & { readonly options: S },
): Line<z.input<S>> {
  return { make: (name) => ({ ...planning(name, s), runner: running(name, s) }) };
}

/** A strategy that only plans: its plans run by the strategy whose shape they have. */
function plans<S extends z.ZodType<object>>(
  s: StrategyPlanner<z.output<S>> & { readonly options: S },
): Line<z.input<S>> {
  return { make: (name) => ({ ...planning(name, s), runner: null }) };
}

/**
 * Every strategy, by the name users give it: a strategy exists when it is listed here, and
 * nothing else in the SDK compares a strategy's name.
 */
const BUILT_IN = {
  data: runs(dataStrategy),
  ps: runs(psStrategy),
  model: runs(modelStrategy),
  pipeline: runs(pipelineStrategy),
  hybrid: runs(hybridStrategy),
  auto: plans(autoStrategy),
};

/** The strategies strategy(name, options) offers: "data", "ps", "model", "pipeline", "hybrid", "auto". */
export type StrategyName = keyof typeof BUILT_IN;
/** The strategy a cluster uses when strategy() is not called. */
export const DEFAULT_STRATEGY: StrategyName = "data";
/** What strategy(name, options) accepts for each built-in strategy: its schema's input, under a name of its own. */
export type StrategyInput<N extends StrategyName> = StrategyOptionsByName[N];
/** A compile-time check that the named option types are exactly the table's schemas' inputs. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const NAMED_AS_TABLE: { [N in StrategyName]: Same<StrategyInput<N>, NonNullable<(typeof BUILT_IN)[N]["input"]>> } = {
  data: true,
  ps: true,
  model: true,
  pipeline: true,
  hybrid: true,
  auto: true,
};
void NAMED_AS_TABLE;

const table = new Map<string, StrategyEntry>(Object.entries(BUILT_IN).map(([name, line]) => [name, line.make(name)]));

/**
 * Adds a strategy to this process's table (a test's toy strategy): `strategy(name)` then finds it
 * like a built-in one. Not exported from the package: a strategy's plans and runtime reach into
 * the SDK's internals, which change between versions.
 */
export function addStrategy<S extends z.ZodType<object>, P extends PlanData>(
  name: string,
  s: (Strategy<z.output<S>, P> | StrategyPlanner<z.output<S>>) & { readonly options: S },
): void {
  if (table.has(name)) throw new ConfigError(`a strategy named "${name}" exists already`);
  table.set(name, "owns" in s ? runs(s).make(name) : plans(s).make(name));
}

export function strategyNames(): string[] {
  return [...table.keys()];
}

/** The strategy `name` names, or a ConfigError listing those that exist. */
export function strategyNamed(name: string): StrategyEntry {
  const s = table.get(name);
  if (!s) {
    throw new ConfigError(`invalid strategy("${name}")`, {
      hint: `this version of meshtrain offers: ${strategyNames()
        .map((n) => `"${n}"`)
        .join(", ")}`,
    });
  }
  return s;
}

/** The cluster's strategy. */
export function strategyOfSpec(spec: ClusterSpec): StrategyEntry {
  return strategyNamed(spec.strategy.name);
}

/** The strategy that runs a plan (auto's plans are data, pipeline or hybrid plans). */
export function strategyOf(plan: PlanData): StrategyRunnerEntry {
  const s = strategyNamed(plan.strategy);
  if (!s.runner)
    throw new StateError(
      `strategy "${plan.strategy}" plans but does not run plans; its plans name the strategy that runs them`,
    );
  return s.runner;
}

/** The checks every strategy's options get against the rest of the spec, then its own. */
export function checkStrategy(spec: ClusterSpec): void {
  const s = strategyOfSpec(spec);
  const name = spec.strategy.name;
  if (s.servers === "required" && serverCount(spec) === 0) {
    throw new ConfigError(`strategy("${name}") needs parameter servers: none were asked for`, {
      hint: `add .ps(n) to start n parameter servers, e.g. cluster().workers(4).ps(2).strategy("${name}")`,
    });
  }
  if (s.servers === "refused" && serverCount(spec) > 0) {
    throw new ConfigError(
      `.ps(${serverCount(spec)}) asks for parameter servers, but strategy "${name}" does not use them`,
      { hint: 'use strategy("ps", { mode: "async" | "sync" }), or drop .ps()' },
    );
  }
  if (spec.spares !== undefined && !s.spares) {
    throw new ConfigError(
      `spares(${spec.spares}) take a lost worker's place under strategies ${[...table]
        .filter(([, e]) => e.spares)
        .map(([n]) => `"${n}"`)
        .join(", ")}; under strategy "${name}" a lost worker fails the fit`,
      {
        hint: 'use strategy("data", { elastic: { minWorkers } }), or a model, pipeline, hybrid or sync parameter-server fit with a checkpoint; or drop .spares() and resume from a checkpoint (docs/faults.md)',
      },
    );
  }
  const slowed = Object.keys(spec.slowdown ?? {});
  if (slowed.length > 0 && !s.slowdown) {
    throw new ConfigError(
      `slowdown() slows a worker's whole step, which strategies ${[...table]
        .filter(([, e]) => e.slowdown)
        .map(([n]) => `"${n}"`)
        .join(" and ")} run; strategy "${name}" splits steps into stages`,
      {
        hint: 'use strategy("data") or strategy("ps") for straggler experiments',
      },
    );
  }
  s.check(spec);
}

/** Each strategy's planner, its options parsed from the spec it is given (the cluster's own). */
function planning<O>(name: string, s: StrategyPlanner<O>): Omit<StrategyEntry, "runner"> {
  const own = (spec: ClusterSpec): O => {
    if (spec.strategy.name !== name)
      throw new StateError(`strategy "${name}" was asked to read the options of strategy "${spec.strategy.name}"`);
    return s.options.parse(spec.strategy.options);
  };
  return {
    family: s.family,
    servers: s.servers,
    slowdown: s.slowdown,
    spares: s.spares,
    profiled: s.profiled,
    roles: s.roles,
    parse: (options) =>
      parseOrThrow(
        s.options,
        options ?? {},
        `strategy("${name}") options`,
        `each option's meaning and default: ${name === "data" ? "docs/data-parallel.md" : "docs/strategies.md#the-builder"}`,
      ) as Readonly<Record<string, unknown>>,
    check: (spec) => s.check(own(spec), spec),
    probesRing: (spec) => s.probesRing(own(spec), workerCount(spec)),
    plan: (spec, model, o) => s.plan(own(spec), spec, model, o),
  };
}

/** Each strategy's runner, handed only plans of its own shape. */
function running<O, P extends PlanData>(name: string, s: Strategy<O, P>): StrategyRunnerEntry {
  const narrow = (plan: PlanData): P => {
    if (!s.owns(plan)) throw new StateError(`a ${plan.strategy} plan reached strategy "${name}"`);
    return plan;
  };
  const optionsIn = (spec: ClusterSpec): O | undefined =>
    spec.strategy.name === name ? s.options.parse(spec.strategy.options) : undefined;
  return {
    replan: (spec, model, plan, o, pinned) => s.replan(optionsIn(spec), spec, model, narrow(plan), o, pinned),
    place: (plan, layers, rank) => s.place(narrow(plan), layers, rank),
    format: (plan) => s.format(narrow(plan)),
    explain: (plan) => s.explain(narrow(plan)),
    draw: (plan) => s.draw(narrow(plan)),
    fit: (ctx, model, dataset, o, plan) => {
      if (!s.owns(plan)) throw new StateError(`a ${plan.strategy} plan reached strategy "${name}"`);
      return s.fit(ctx, model, dataset, o, plan);
    },
    describe: (run, summary) => s.describe(run, narrow(run.plan), summary),
    probes: (plan) => s.probes?.(narrow(plan)) ?? {},
  };
}
