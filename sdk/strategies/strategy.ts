import type * as tf from "@tensorflow/tfjs";
import type { z } from "zod";
import type { ClusterSpec } from "../config/cluster-spec";
import { ConfigError } from "../errors/errors";
import type { ResolvedFitOptions } from "../driver/fit-options";
import type { Dataset } from "../data/dataset";
import type { FitContext } from "../driver/fit-context";
import type { ProfileProbes } from "../driver/model-profiles";
import type { RunRecord } from "../metrics/records";
import type { RunSummary } from "../metrics/summary";
import type { ModelSummary } from "../plan/model-summary";
import type { PlanData, PlanMethods, PlanOptions } from "../plan/plans";
import type { RoleName } from "../protocol/messages";
import type { Figure } from "../viz/figure";

/** place() for strategies whose every worker holds every layer. */
export function refusePlacement(strategy: string): never {
  throw new ConfigError(`place() splits layers over stages, but under ${strategy} every worker holds all layers`, {
    hint: 'use strategy("model"), ("pipeline") or ("hybrid", { stages }) to place layers on workers',
  });
}

/** What a strategy adds to a run's summary: a label for legends, lines of text, figures. */
export interface RunNotes {
  label: string;
  /** Who held the run back, and measures only this strategy has. */
  lines: string[];
  /** Figures beyond throughput and the per-rank breakdown, in notebooks and reports (made only when drawn). */
  figures(): Array<{ title: string; figure: Figure }>;
}

/**
 * How a strategy plans: its options (validated when strategy(name, options) is called), what it
 * asks of the cluster, and a pure planner. Strategies that only plan (auto) hand their plans to
 * the strategy whose plan shape they made.
 */
export interface StrategyPlanner<O> {
  /**
   * What strategy(name, options) takes: defaults filled in, unknown keys refused. Parsed once
   * when the cluster is described and again wherever the strategy reads them (idempotent).
   */
  readonly options: z.ZodType<O>;
  /**
   * Plans of one family can be trained by any strategy of the family (a plan made by "auto", or
   * placed by hand under "pipeline", trains on a "hybrid" cluster of the same shape); "any":
   * auto, which makes plans of more than one family.
   */
  readonly family: "replicas" | "servers" | "stages" | "any";
  /** Parameter servers (.ps(n)): "required" (strategy ps), else refused. */
  readonly servers: "required" | "refused";
  /** Whether .slowdown(rank, factor) applies: its workers compute whole steps. */
  readonly slowdown: boolean;
  /** Whether .spares(n) serve it: a lost worker's place taken by a spare and the fit going on (default: no). */
  readonly spares?: boolean;
  /**
   * What fit() times on a worker before planning, for predictions from measured times: the
   * replica step ("step"), or every layer as well ("layers", for plans that place layers); false: nothing.
   */
  readonly profiled: false | "step" | "layers";
  /** Checks the options against the rest of the cluster's description; the message shows the arithmetic. */
  check(options: O, spec: ClusterSpec): void;
  /** Whether fit() wires and times the data ring before planning, to price the plan's all-reduce by it. */
  probesRing(options: O, workers: number): boolean;
  /** Pure: no sockets, no processes. */
  plan(options: O, spec: ClusterSpec, model: ModelSummary, planOptions: PlanOptions): PlanData;
  /** The roles its workers play, by the name its load messages give (the workers' role table has them). */
  readonly roles: readonly RoleName[];
}

/**
 * How a strategy runs the plans it makes: prints, explains, draws and places them, and trains
 * with them from the driver. The table finds it by the plan's `strategy`.
 */
export interface StrategyRunner<O, P extends PlanData> {
  /** Whether `plan` has this strategy's shape (the one check that narrows a plan to P). */
  owns(plan: PlanData): plan is P;
  /**
   * The same shape as `plan` (stages, placement, reasons) made again for other plan options, e.g.
   * a fit's batch; `options`: this cluster's options when its strategy is this one, else undefined.
   */
  replan(
    options: O | undefined,
    spec: ClusterSpec,
    model: ModelSummary,
    plan: P,
    planOptions: PlanOptions,
    pinned?: ReadonlyMap<number, readonly [number, number]>,
  ): P;
  /** Stages pinned by place(layers, rank); refuses for plans without stages. */
  place(plan: P, layers: readonly [number, number], rank: number): Map<number, readonly [number, number]>;
  format(plan: P): string;
  explain(plan: P): string;
  /** The placement diagram, as SVG text. */
  draw(plan: P): string;
  /** Trains `model` from the driver; when it resolves, `model` holds the trained weights. */
  fit(
    ctx: FitContext,
    model: tf.LayersModel,
    dataset: Dataset,
    options: ResolvedFitOptions,
    plan: P & PlanMethods,
  ): Promise<RunRecord>;
  /** What a run adds to its summary (run.plan is this strategy's: the table checked owns()). */
  describe(run: RunRecord, plan: P, summary: RunSummary): RunNotes;
  /** What the plan's options time on a worker beside the replica step, for their own predictions (absent: nothing). */
  probes?(plan: P): ProfileProbes;
}

/** A strategy that plans and runs its plans: data, ps, model, pipeline, hybrid. */
export type Strategy<O, P extends PlanData> = StrategyPlanner<O> & StrategyRunner<O, P>;
