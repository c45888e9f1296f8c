/**
 * meshtrain: train TensorFlow.js models on many workers at once.
 *
 *   const c = await cluster().workers(3).strategy("data").launch();
 *   const run = await c.fit(model, datasets.mnist(), { epochs: 1, batchSize: 96 });
 *   await c.close();
 */
import { quietCpuBanner } from "./backends/quiet-banner";

quietCpuBanner();

export { cluster, ClusterBuilder } from "./cluster/builder";
export { Cluster, type ClusterState } from "./cluster/cluster";
export { closeAll, liveClusters } from "./cluster/registry";
export { datasets, Dataset, type Column, type DatasetSource, type LinearOptions, type MnistOptions, type SyntheticOptions } from "./data/index";
export * from "./errors/errors";
export { TrainingRun } from "./cluster/training-run";
export type { LogLine, RunRecord, StepRecord, WorkerStepRecord, PushRecord, Departure, PsRunRecord, MembershipChange } from "./metrics/records";
export type { RunSummary, WorkerSummary } from "./metrics/summary";
export type { CostReport } from "./metrics/cost";
export type { StragglerSummary } from "./metrics/stragglers";
export type { Figure, Trace, Layout } from "./viz/figure";
export { type ScalingPoint } from "./viz/scaling";
export { scalingFigure, barFigure, scheduleFigure, stalenessFigure, lossFigure } from "./viz/public-figures";
export { figureToSvg } from "./viz/svg-chart";
export { DISPLAY, type MimeBundle } from "./viz/displayable";
export { throughput, median, defaultWarmup } from "./metrics/throughput";
export type { ModelSummary, LayerSummary } from "./plan/model-summary";
export type { WorkerInfo } from "./protocol/messages";
export { PROTOCOL_VERSION } from "./protocol/version";
export type { BackendChoice, BackendName } from "./config/backend";
export type { ClusterSpec, StrategyName } from "./config/cluster-spec";
export type { FitOptions } from "./config/fit-options";
export type { LossName } from "./config/loss";
export type { OptimizerInput, OptimizerSpec } from "./config/optimizer";
export type { WorkerSnapshot } from "./config/worker-snapshot";
export { formatDataPlan } from "./strategies/data/planner";
export type { Plan, PlanData, PlanMethods, DataParallelPlan, PlanDevice, PipelinePlan, StagePlan, PipelineKind, PsPlan, ShardVariable } from "./plan/plans";
export type { PlanRequest } from "./cluster/plan-request";
/** The sample order of one epoch as fit shuffles it (null: in order), to reproduce a fit's batches. */
export { epochOrder } from "./plan/batches";
export { estimateMemory, type MemoryEstimateWithTotal } from "./plan/estimate-memory";
export type { MemoryEstimate } from "./plan/memory";
export type { Prediction } from "./plan/predict";
export { makeSchedule, formatSchedule, simulate, bubbleFraction, theoreticalBubble, maxInFlight, checkSchedule, type Schedule, type ScheduleName, type Action } from "./plan/schedules";

export { runWorker, type WorkerOptions } from "./worker/main";
export { useBackend, type BackendReport } from "./worker/backend";
export { VERSION } from "./version";
