import type * as tf from "@tensorflow/tfjs";
import type { ClusterSpec } from "../config/cluster-spec";
import { ConfigError } from "../errors/errors";
import type { ResolvedFitOptions } from "../config/fit-options";
import type { Dataset } from "../data/dataset";
import type { FitContext } from "../driver/fit-context";
import type { RunRecord } from "../metrics/records";
import type { RunSummary } from "../metrics/summary";
import type { ModelSummary } from "../plan/model-summary";
import type { PlanData, PlanMethods, PlanOptions } from "../plan/plans";
import type { Figure } from "../viz/figure";
import type { RoleFactory } from "../worker/role";

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
 * One strategy, behind one interface: it plans (pure), prints, explains and draws its plans,
 * trains with them from the driver, and names the worker roles it loads. The registry is a table
 * of these objects and the only place that knows their names.
 */
export interface Strategy<P extends PlanData = PlanData> {
  /**
   * Plans of one family can be trained by any strategy of the family (a plan made by "auto", or
   * placed by hand under "pipeline", trains on a "hybrid" cluster of the same shape); "any":
   * auto, which makes plans of more than one family.
   */
  readonly family: "replicas" | "servers" | "stages" | "any";
  /** Pure: no sockets, no processes. */
  plan(spec: ClusterSpec, model: ModelSummary, options: PlanOptions): PlanData;
  /** The same shape as `plan` (stages, placement, reasons) made again for other options, e.g. a fit's batch. */
  replan(spec: ClusterSpec, model: ModelSummary, plan: P, options: PlanOptions, pinned?: ReadonlyMap<number, readonly [number, number]>): P;
  /** Stages pinned by place(layers, rank); refuses for plans without stages. */
  place(plan: P, layers: readonly [number, number], rank: number): Map<number, readonly [number, number]>;
  format(plan: P): string;
  explain(plan: P): string;
  /** The placement diagram, as SVG text. */
  draw(plan: P): string;
  /** Trains `model` from the driver; when it resolves, `model` holds the trained weights. */
  fit(ctx: FitContext, model: tf.LayersModel, dataset: Dataset, options: ResolvedFitOptions, plan: P & PlanMethods): Promise<RunRecord>;
  describe(run: RunRecord, summary: RunSummary): RunNotes;
  /** The roles its workers play, by the name the driver's load message gives. */
  readonly roles: Readonly<Record<string, RoleFactory>>;
}
