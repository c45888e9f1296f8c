import type * as tf from "@tensorflow/tfjs";
import type { ClusterSpec } from "../config/cluster-spec";
import type { Dataset } from "../data/dataset";
import { AbortError } from "../errors/errors";
import type { WorkerHandle } from "../members/worker-handle";
import type { WorkerOutput } from "../members/worker-output";
import type { FitEnd, RunRecord, StepRecord } from "../metrics/records";
import { summarizeModel, type ModelSummary } from "../plan/model-summary";
import type { Plan, PlanData, PlanOptions } from "../plan/plans";
import type { RingSpeed } from "../plan/predict";
import type { ModelProfile } from "../plan/profile";
import { profileBudgetMs, type ProfileProbes, type ProfileRequest } from "./model-profiles";
import { asSequential, copyLayerWeights } from "./chain-model";
import { withSampleShapes } from "./sample-shapes";
import { devicesOf, withDriver } from "./devices";
import type { FitContext } from "./fit-context";
import { resolveFitOptions, type FitOptions, type ResolvedFitOptions } from "./fit-options";
import type { DataPlaneChoice } from "../protocol/data-plane";
import { FitAborted, type FitStop } from "./fit-stop";
import { endOf, FitWatchers } from "./fit-watch";
import { EpochWalk } from "./epoch-walk";
import { arrangeColumns, checkShapes } from "./input-checks";
import { checkFitArguments } from "./fit-arguments";
import { checkSchedule } from "./learning-rates";
import { splitValidation } from "./validation-data";
import { classWeightTable } from "./class-weight";
import { compileIfNot } from "./model-transfer";
import { nativeStepOptions } from "../backends/native/step/compile";

/** What the cluster lends one fit: its workers, their output, how to time the model and the ring, and the fit's context. */
export interface FitHost {
  readonly spec: ClusterSpec;
  readonly workers: readonly WorkerHandle[];
  /** Workers and servers, as they are now (elastic fits change them). */
  members(): readonly WorkerHandle[];
  readonly output: WorkerOutput;
  step(): number | undefined;
  /** The model's profile at the fit's batch, timed on a worker (undefined: planned from FLOPs). */
  profileFor(model: tf.LayersModel, o: ResolvedFitOptions, request: ProfileRequest): Promise<ModelProfile | undefined>;
  /** The data ring wired and timed, where the strategy prices its plans by it. */
  ring(): Promise<RingSpeed | undefined>;
  /** Where the current wiring's all-reduces travel, if it has any. */
  dataPlane(): DataPlaneChoice | undefined;
  context(stop: FitStop): FitContext;
}

/** What the cluster's strategy does in a fit: plan it (pure), and train with the plan. */
export interface FitStrategy {
  /** What its plans use of a profile of the model (false: none is taken). */
  readonly profiled: false | "step" | "layers";
  plan(model: ModelSummary, options: PlanOptions, given: PlanData | undefined): Plan;
  /** What its plan's options time on a worker beside the replica step. */
  probes(plan: PlanData): ProfileProbes;
  fit(
    ctx: FitContext,
    model: tf.LayersModel,
    dataset: Dataset,
    options: ResolvedFitOptions,
    plan: Plan,
  ): Promise<RunRecord>;
}

/**
 * One fit, from the driver: the options resolved, the model and data checked, the model timed
 * and the plan made, the strategy's runtime trained with it, and the trained weights put back
 * in the user's model. Failures that leave every worker in a known state reject with
 * FitAborted (the cluster stays usable); any other failure is the cluster's.
 */
export async function runFit(
  host: FitHost,
  strategy: FitStrategy,
  model: tf.LayersModel,
  given: Dataset,
  options: FitOptions,
  stop: FitStop,
): Promise<RunRecord> {
  const { resolved, dataset } = resolveFit(model, given, options);
  const watch = watchFit(host, resolved, dataset);
  const seen: StepRecord[] = [];
  const o = {
    ...resolved,
    onStep: (r: StepRecord) => (seen.push(r), watch.step(r), resolved.onStep?.(r)),
    onValidated: (epoch: number, logs: Record<string, number>) => watch.validated(epoch, logs),
  };
  const started = performance.now();
  let chain: tf.LayersModel | undefined;
  let sized: tf.LayersModel | undefined;
  let plan: Plan | undefined;
  try {
    try {
      sized = await withSampleShapes(model, dataset);
      plan = await planFit(host, strategy, sized, dataset, o);
      chain = await asSequential(sized);
    } catch (err) {
      throw new FitAborted(err);
    }
    watch.stepsBegin();
    const record = await strategy.fit(host.context(stop), chain, dataset, o, plan);
    return finished(host, watch, { record, model, chain, dataset, o });
  } catch (caught) {
    const err = watch.end(caught);
    // A stop asked for keeps what was recorded up to there: the run so far rides on the AbortError.
    if (err instanceof FitAborted && err.error instanceof AbortError && plan) {
      err.partial = {
        history: seen,
        plan,
        workers: host.workers.map((h) => h.snapshot()),
        seed: o.seed,
        epochs: o.epochs,
        wallMs: performance.now() - started,
        logs: watch.logs(),
        ended: endOf(err),
      };
    }
    throw err;
  } finally {
    if (chain !== undefined && chain !== model) chain.dispose();
    if (sized !== undefined && sized !== model && sized !== chain) sized.dispose();
  }
}

/** What watches the fit from the driver: its progress display, the stall watch, the workers' output lines. */
function watchFit(host: FitHost, resolved: ResolvedFitOptions, dataset: Dataset): FitWatchers {
  return new FitWatchers(host.spec, resolved, dataset, {
    size: host.workers.length,
    output: host.output,
    members: () => host.members(),
    step: () => host.step(),
  });
}

/**
 * The fit's options resolved and its data arranged, or FitAborted: options that cannot work are
 * refused before anything is sent, so the cluster stays as it was.
 */
function resolveFit(
  model: tf.LayersModel,
  given: Dataset,
  options: FitOptions,
): { resolved: ResolvedFitOptions; dataset: Dataset } {
  try {
    checkFitArguments(model, given, options);
    const parsed = resolveFitOptions(options, model);
    const split = splitValidation(arrangeColumns(model, given), parsed, (d) => arrangeColumns(model, d));
    const dataset = split.train;
    const resolved = {
      ...parsed,
      ...(split.validation ? { validation: split.validation } : {}),
      ...(parsed.classWeight ? { classTable: classWeightTable(dataset, parsed.classWeight) } : {}),
    };
    checkSchedule(resolved, dataset.size);
    // Callbacks read and set model.stopTraining, which an uncompiled Sequential model refuses: compiled as fit will leave it.
    if (resolved.callbacks) compileIfNot(model, resolved);
    return { resolved, dataset };
  } catch (err) {
    throw new FitAborted(err);
  }
}

/**
 * The fit's plan: the shapes checked, the model timed on a worker where the strategy prices by a
 * profile, and the data ring timed where it prices by the ring.
 */
async function planFit(
  host: FitHost,
  strategy: FitStrategy,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
): Promise<Plan> {
  checkShapes(model, dataset, o);
  const summary = summarizeModel(model);
  const base: PlanOptions = {
    batchSize: o.batchSize,
    datasetSize: dataset.size,
    optimizer: o.optimizer,
    loss: o.loss,
    ...nativeStepOptions(model),
    devices: host.workers.map((h) => devicesOf(h)),
    serverDevices: host
      .members()
      .filter((h) => h.role === "ps")
      .map((h) => devicesOf(h)),
    ...withDriver(),
  };
  // Bounded by what it can save: a tenth of the epoch the plan predicts from FLOPs, or a second, at most the fit.
  const request = (): ProfileRequest => {
    const draft = strategy.plan(summary, base, undefined);
    return {
      layers: strategy.profiled === "layers",
      budgetMs: profileBudgetMs(draft, dataset.size, o.batchSize, o.epochs),
      ...strategy.probes(draft),
    };
  };
  const profile = o.plan || !strategy.profiled ? undefined : await host.profileFor(model, o, request());
  const ring = o.plan ? undefined : await host.ring();
  return strategy.plan(summary, { ...base, ...(profile ? { profile } : {}), ...(ring ? { ring } : {}) }, o.plan);
}

/** A callback that set model.stopTraining (early stopping) ended the fit before its last step, or its last step did. */
function howItEnded(record: RunRecord, dataset: Dataset, o: ResolvedFitOptions): FitEnd {
  const last = record.history.at(-1)?.step ?? -1;
  return o.callbacks?.stopTraining && last < new EpochWalk(dataset.size, o).total - 1
    ? { by: "callback" }
    : { by: "done" };
}

/** A fit that trained: the weights back in the user's model, what ended it said, and its record with what the driver knows. */
function finished(
  host: FitHost,
  watch: FitWatchers,
  f: { record: RunRecord; model: tf.LayersModel; chain: tf.LayersModel; dataset: Dataset; o: ResolvedFitOptions },
): RunRecord {
  const { record, model, chain, o } = f;
  if (chain !== model) copyLayerWeights(chain, model);
  const ended = howItEnded(record, f.dataset, o);
  watch.end(undefined, ended);
  compileIfNot(model, o);
  const dataPlane = host.dataPlane();
  return {
    ...record,
    ended,
    ...(dataPlane ? { dataPlane } : {}),
    ...(o.checkpoint?.cadence.chosen ? { checkpoints: o.checkpoint.cadence.chosen } : {}),
    logs: watch.logs(),
    training: { optimizer: o.optimizer, loss: o.loss, metrics: o.metrics.map((m) => m.name), origins: o.origins },
  };
}
