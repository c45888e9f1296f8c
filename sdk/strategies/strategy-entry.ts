import type { ClusterSpec } from "../config/cluster-spec";
import type { FitStrategy } from "../driver/fit";
import type { RunRecord } from "../metrics/records";
import type { RunSummary } from "../metrics/summary";
import type { ModelSummary } from "../plan/model-summary";
import type { PlanData, PlanOptions } from "../plan/plans";
import type { RunNotes, StrategyPlanner } from "./strategy";

/**
 * A strategy as the table holds it: its option and plan types closed over, so callers pass the
 * cluster's spec and plans as they are, and the strategy reads its own options and narrows its
 * own plans.
 */
export interface StrategyEntry extends Pick<
  StrategyPlanner<unknown>,
  "family" | "servers" | "slowdown" | "spares" | "profiled" | "roles"
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
export interface StrategyRunnerEntry extends Pick<FitStrategy, "fit" | "probes"> {
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
  describe(run: RunRecord, summary: RunSummary): RunNotes;
}
