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
export { Cluster } from "./cluster/cluster";
export type { ClusterState } from "./cluster/usable";
export { closeAll } from "./cluster/live-clusters";
export { liveClusters } from "./cluster/live-list";
export type { LaunchOptions } from "./cluster/launch-options";
export {
  datasets,
  Dataset,
  type Column,
  type Batch,
  type ColumnNames,
  type TensorsInput,
  type DatasetSource,
  type LinearOptions,
  type MnistOptions,
  type SyntheticOptions,
} from "./data/index";
export * from "./errors/errors";
export { TrainingRun } from "./cluster/training-run";
export {
  layers,
  MultiHeadAttention,
  PositionEmbedding,
  type Initializer,
  type InitializerInput,
  type LayerKwargs,
  type MultiHeadAttentionArgs,
  type PositionEmbeddingArgs,
} from "./model/layers/index";
export type {
  FitEnd,
  LogLine,
  RunRecord,
  StepRecord,
  WorkerStepRecord,
  PushRecord,
  Departure,
  PsRunRecord,
  MembershipChange,
  OverlapTrialRecord,
  EpochHistory,
  EpochValidation,
  TrainingSetup,
  NonFiniteReport,
  MemberMemory,
} from "./metrics/records";
export type { WorkerMemory } from "./protocol/worker-memory";
export { ownBytes } from "./metrics/memory-lines";
export type { DataPlaneChoice, DataPlanePath } from "./protocol/data-plane";
export type { TensorData, Tensorlike } from "./protocol/tensor";
export type { Compression } from "./protocol/wire-formats";
export type { OverlapChoice } from "./plan/overlap";
export type { BatchSplit } from "./plan/batches";
export type { Origin } from "./config/compiled";
export type { ModelProfile } from "./plan/profile";
export type { JoinTarget } from "./worker/join-driver";
export type { FromEnvOptions } from "./launchers/spmd";
export type { RunSummary, WorkerSummary } from "./metrics/summary";
export type { CostReport } from "./metrics/cost";
export type { StragglerSummary } from "./metrics/stragglers";
export type { Figure, Trace, Layout, Axis } from "./viz/figure";
export { type ScalingPoint } from "./viz/scaling";
export { scalingFigure, barFigure, scheduleFigure, stalenessFigure, lossFigure } from "./viz/public-figures";
export { figureToSvg } from "./viz/svg-chart";
export { DISPLAY, type MimeBundle } from "./viz/displayable";
export { invitation, type Invitation } from "./viz/invitation";
export { throughput, defaultWarmup } from "./metrics/throughput";
export type { ModelSummary, LayerSummary } from "./plan/model-summary";
export type { Cut } from "./model/cuts";
export type { WorkerInfo } from "./protocol/messages";
export { PROTOCOL_VERSION } from "./protocol/version";
export type { BackendChoice, BackendName } from "./protocol/backend-names";
export type { ClusterSpec } from "./config/cluster-spec";
export type { StrategyName, StrategyInput } from "./strategies/strategy-table";
export type {
  AutoStrategyOptions,
  DataStrategyOptions,
  HybridStrategyOptions,
  ModelStrategyOptions,
  PipelineStrategyOptions,
  PsStrategyOptions,
  StrategyOptionsByName,
} from "./strategies/strategy-options";
export type { FitOptions } from "./driver/fit-options";
export type { FitCallbacks } from "./driver/fit-callbacks";
export { learningRates, type LearningRateSchedule } from "./driver/learning-rates";
export type { ValidationData } from "./driver/validation-data";
export type { ClassWeight } from "./driver/class-weight";
export type { LossName } from "./protocol/loss-names";
export type { LossInput, LossWeights } from "./driver/output-heads";
export type { OptimizerInput, OptimizerSpec } from "./protocol/optimizer-spec";
export type { WorkerSnapshot } from "./config/worker-snapshot";
export { formatDataPlan } from "./strategies/data/plan-text";
export type {
  Plan,
  PlanData,
  PlanBatch,
  PlanMethods,
  DataParallelPlan,
  PlanDevice,
  PipelinePlan,
  StagePlan,
  PipelineKind,
  PsPlan,
  ShardVariable,
} from "./plan/plans";
export type { HandlingCost } from "./plan/core-load";
export type { PlanRequest } from "./cluster/plan-request";
/** The sample order of one epoch as fit shuffles it (null: in order), to reproduce a fit's batches. */
export { epochOrder } from "./plan/batches";
export { estimateMemory, type MemoryEstimateWithTotal } from "./plan/estimate-memory";
export type { MemoryEstimate, ShardStage } from "./plan/memory";
export { memoryTotal, RUNTIME_GROWTH_BYTES } from "./plan/memory";
export type { Prediction } from "./plan/predict";
export {
  makeSchedule,
  formatSchedule,
  simulate,
  bubbleFraction,
  theoreticalBubble,
  maxInFlight,
  checkSchedule,
  type Schedule,
  type ScheduleName,
  type Action,
  type TimedAction,
} from "./plan/schedules";

import type { WorkerOptions } from "./worker/main";
export type { WorkerOptions };
export { useBackend, type BackendReport } from "./backends/select-backend";
export { describeDevices } from "./backends/devices-report";

/**
 * Runs a worker in this process, as `meshtrain worker` does. The worker's code is loaded when
 * this is called: a driver that never calls it never loads it.
 */
export function runWorker(options: WorkerOptions): Promise<number> {
  return (require("./worker/main") as typeof import("./worker/main")).runWorker(options);
}
export { VERSION } from "./protocol/sdk-version";
export { median } from "./util/median";
