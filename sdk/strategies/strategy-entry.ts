import type * as tf from "@tensorflow/tfjs";
import type { ClusterSpec } from "../config/cluster-spec";
import type { Dataset } from "../data/dataset";
import type { FitContext } from "../driver/fit-context";
import type { ProfileProbes } from "../driver/model-profiles";
import type { ResolvedFitOptions } from "../driver/fit-options";
import type { RunRecord } from "../metrics/records";
import type { RunSummary } from "../metrics/summary";
import type { ModelSummary } from "../plan/model-summary";
import type { Plan, PlanData, PlanOptions } from "../plan/plans";
import type { RunNotes, StrategyPlanner } from "./strategy";

/**
 * A strategy as the table holds it: its option and plan types closed over, so callers pass the
 * cluster's spec and plans as they are, and the strategy reads its own options and narrows its
 * own plans.
 */
export interface StrategyEntry extends Pick<
  StrategyPlanner<unknown>,
  "family" | "servers" | "slowdown" | "profiled" | "roles"
> {
  /** strategy(name, options): the options validated, defaults filled in; ConfigError naming each bad field. */
  parse(options: unknown): Readonly<Record<string, unknown>>;
  check(spec: ClusterSpec): void;
  probesRing(spec: ClusterSpec): boolean;
  plan(spec: ClusterSpec, model: ModelSummary, options: PlanOptions): PlanData;
  /** null for strategies that only plan (auto): their plans run by the strategy they name. */
  readonly runner: StrategyRunnerEntry | null;
}

/** A strategy's runner as the table holds it: any plan goes in, and is refused unless it is the runner's. */
export interface StrategyRunnerEntry {
  replan(
    spec: ClusterSpec,
    model: ModelSummary,
    plan: PlanData,
    options: PlanOptions,
    pinned?: ReadonlyMap<number, readonly [number, number]>,
  ): PlanData;
  place(plan: PlanData, layers: readonly [number, number], rank: number): Map<number, readonly [number, number]>;
  format(plan: PlanData): string;
  explain(plan: PlanData): string;
  draw(plan: PlanData): string;
  fit(
    ctx: FitContext,
    model: tf.LayersModel,
    dataset: Dataset,
    options: ResolvedFitOptions,
    plan: Plan,
  ): Promise<RunRecord>;
  describe(run: RunRecord, summary: RunSummary): RunNotes;
  /** What the plan's options time on a worker beside the replica step (none: {}). */
  probes(plan: PlanData): ProfileProbes;
}
