/**
 * meshtrain: train TensorFlow.js models on many workers at once.
 *
 *   const c = await cluster().workers(3).strategy("data").launch();
 *   const run = await c.fit(model, datasets.mnist(), { epochs: 1, batchSize: 96 });
 *   await c.close();
 */
export { cluster, ClusterBuilder } from "./cluster/builder";
export { Cluster, type ClusterState } from "./cluster/cluster";
export { datasets, Dataset, type Column, type MnistOptions, type SyntheticOptions } from "./data/index";
export * from "./errors/errors";
export { TrainingRun, type RunSummary, type WorkerSummary } from "./metrics/run";
export { throughput, median, defaultWarmup } from "./metrics/throughput";
export type { ModelSummary, LayerSummary } from "./plan/model-summary";
export type { WorkerInfo } from "./protocol/messages";
export { PROTOCOL_VERSION } from "./protocol/version";
export type { BackendChoice, BackendName } from "./spec/backend";
export type { ClusterSpec, StrategyName } from "./spec/cluster-spec";
export type { FitOptions, StepRecord, WorkerStepRecord } from "./spec/fit-options";
export type { LossName } from "./spec/loss";
export type { OptimizerInput, OptimizerSpec } from "./spec/optimizer";
export type { WorkerSnapshot } from "./spec/worker-snapshot";
export { formatDataPlan, type DataParallelPlan } from "./strategies/data/planner";
export type { Plan } from "./strategies/registry";
export { runWorker, type WorkerOptions } from "./worker/main";
export { VERSION } from "./version";
