import * as tf from "@tensorflow/tfjs";
import { Dataset } from "../data/dataset";
import { isTensorsInput } from "../data/from-tensors";
import type { ValidationData } from "./validation-data";
import type { ClassWeight } from "./class-weight";
import { CallbackRun, type FitCallbacks } from "./fit-callbacks";
import type { LearningRateSchedule } from "./learning-rates";
import { z } from "zod";
import { ConfigError } from "../errors/errors";
import { readCompiled, type Origin } from "../config/compiled";
import { LOSS_NAMES, type Heads, type LossName } from "../protocol/loss-names";
import { resolveHeads, type LossInput, type LossWeights } from "./output-heads";
import { OptimizerSpecSchema, type OptimizerInput, type OptimizerSpec } from "../protocol/optimizer-spec";
import { parseOrThrow } from "../config/zod-problem";
import type { StepRecord } from "../metrics/records";
import type { PlanData } from "../plan/plans";
import type { MetricSpec } from "../protocol/metric-spec";
import { Cadence } from "./checkpoint/cadence";

/** What Cluster.fit takes, as model.fit does where they overlap (epochs, batchSize, shuffle...). */
export interface FitOptions {
  /** Passes over the dataset. Default 1. */
  epochs?: number;
  /**
   * The epoch to start at, as model.fit's: epochs initialEpoch to epochs - 1 are trained, each
   * with its own seeded order (so a run continued this way sees the batches an uninterrupted one
   * would). Must be below epochs. Default 0.
   */
  initialEpoch?: number;
  /** Global batch: samples per step over all replicas; must divide evenly among them. Default 32. */
  batchSize?: number;
  /**
   * Gradient accumulation: each update takes `accumulate` batches of batchSize, every replica
   * computing its share in that many chunks and summing their gradients before the one
   * all-reduce: the same update as one step of the accumulate x batchSize batch, with a chunk's
   * activations in memory. Steps, records and epochs count updates. Strategy "data". Default 1.
   */
  accumulate?: number;
  /**
   * By name ("sgd", "momentum", "adam", "rmsprop", "adagrad", "adadelta", "adamax") or name plus config. Default: the optimizer
   * the model was compiled with (its class and settings), else "sgd" with learning rate 0.01.
   */
  optimizer?: OptimizerInput;
  /** A TF.js loss name; for a model with several outputs one name for all, a list (one per output) or a map by output name, as model.compile takes. Default: the model's compiled loss, else "categoricalCrossentropy". */
  loss?: LossInput;
  /**
   * A model with several outputs: each output's weight in the total loss, in order or by output
   * name (Keras' lossWeights; TF.js's compile has none). Default 1 each.
   */
  lossWeights?: LossWeights;
  /**
   * What a step whose loss, gradient or input holds NaN or Infinity does. "stop" (default): fit
   * rejects with NonFiniteError naming the step, the rank and where, and the cluster stays
   * ready. "skip": every replica drops that step's update alike, the step is recorded as
   * skipped, and training goes on (as loss-scaling trainers do).
   */
  nonFinite?: "stop" | "skip";
  /** Seeded permutation of the samples every epoch. Default true, as model.fit. */
  shuffle?: boolean;
  /** Seed of the shuffles; the run records it. Default: a random one. */
  seed?: number;
  /**
   * Data to validate on at the end of every epoch, as model.fit's: a dataset, or [x, y] tensors.
   * The replicas evaluate it, each a shard, in inference mode; `run.byEpoch.history.val_loss` and
   * the callbacks' epoch logs have the results. Strategy "data" (not elastic).
   */
  validationData?: ValidationData;
  /** The dataset's last fraction (cut before shuffling, as model.fit cuts it) to validate on instead of training. */
  validationSplit?: number;
  /**
   * A loss weight per class index, as model.fit's: each sample's loss is weighted by its class's
   * (the label's argmax, or the class id), the batch's loss is the mean of those; validation is
   * not weighted. Every class the training data has needs a weight.
   */
  classWeight?: ClassWeight;
  /** Called after every step with its record. */
  onStep?: (record: StepRecord) => void;
  /**
   * A learning-rate schedule: `(step, epoch, baseRate) => rate`, evaluated on the driver for
   * every step (counted over the fit from 0) and applied alike by every replica, stage and sync
   * server; or one of `learningRates` (warm-up + cosine, step decay). Every step's rate is asked
   * before the first step. Not under async parameter servers.
   */
  schedule?: LearningRateSchedule;
  /**
   * model.fit's callbacks: hooks by name (onTrainBegin, onEpochBegin, onBatchBegin, onBatchEnd,
   * onEpochEnd, onTrainEnd), TF.js callbacks such as tf.callbacks.earlyStopping, or a list of
   * them; called on the driver with the logs model.fit gives, a batch being a step. Setting
   * model.stopTraining ends the fit at the next step boundary (it resolves with the steps done).
   * Synchronous fits (not elastic ones or async parameter servers).
   */
  callbacks?: FitCallbacks;
  /**
   * Stops the fit at the next step boundary when aborted: the workers finish the steps in flight
   * and stay ready, and fit rejects with AbortError (code MT_ERR_ABORTED) carrying the run so far.
   */
  signal?: AbortSignal;
  /**
   * Live feedback while training: in a notebook (with meshtrain/notebook loaded) a throughput
   * plot updated in place; elsewhere a progress bar with loss and samples/s on stderr (a line
   * every 25 steps when stderr is not a terminal). Default: on in a notebook and on a terminal.
   */
  progress?: boolean;
  /**
   * As model.fit's: 0 shows nothing, 1 the live display (as `progress`), 2 one line per epoch on
   * stderr (time, loss, metrics, validation). Give verbose or progress, not both. Default: progress's.
   */
  verbose?: 0 | 1 | 2;
  /**
   * The plan to train with: one from plan() (e.g. with layers placed by hand with place()), made
   * again for this fit's batch and optimizer. Default: the strategy's own plan.
   */
  plan?: PlanData;
  /**
   * Write a checkpoint every `every` steps into `dir` (weights, optimizer state, the step, and
   * the seed that fixes the data order), atomically; the previous one is kept. Every strategy but
   * async parameter servers; under `shard` a part per replica. An elastic sharded fit needs it:
   * after a loss it goes back to the last one. `every: "auto"`: the first after 4 steps, timed,
   * then as often as keeps writing them within 5% of the fit's time (the run's notes say how often).
   */
  checkpoint?: { dir: string; every: number | "auto" };
  /**
   * Continue from a checkpoint: a directory given as checkpoint.dir (its latest) or one
   * checkpoint's own directory. The model gets its weights, the workers its optimizer state, and
   * training resumes at its step with its seed; the result equals a run never interrupted. A
   * data-parallel checkpoint (sharded or not) resumes on any number of workers, under any ZeRO
   * stage or none.
   */
  resumeFrom?: string;
}

const FitOptionsSchema = z.strictObject({
  epochs: z.number().int().min(1).max(1_000_000).default(1),
  initialEpoch: z.number().int().min(0).default(0),
  accumulate: z.number().int().min(1).max(4096).default(1),
  batchSize: z
    .number()
    .int()
    .min(1)
    .max(1 << 24)
    .default(32),
  optimizer: z.preprocess((v) => (typeof v === "string" ? { name: v } : v), OptimizerSpecSchema).optional(),
  loss: z
    .union([z.enum(LOSS_NAMES), z.array(z.enum(LOSS_NAMES)).min(1).max(64), z.record(z.string(), z.enum(LOSS_NAMES))])
    .optional(),
  lossWeights: z
    .union([
      z.array(z.number().nonnegative().finite()).min(1).max(64),
      z.record(z.string(), z.number().nonnegative().finite()),
    ])
    .optional(),
  nonFinite: z.enum(["stop", "skip"]).default("stop"),
  shuffle: z.boolean().default(true),
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1)
    .optional(),
  onStep: z.custom<(record: StepRecord) => void>((v) => typeof v === "function", "must be a function").optional(),
  signal: z
    .custom<AbortSignal>((v) => v instanceof AbortSignal, "must be an AbortSignal (new AbortController().signal)")
    .optional(),
  progress: z.boolean().optional(),
  verbose: z.union([z.literal(0), z.literal(1), z.literal(2)]).optional(),
  plan: z
    .custom<PlanData>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as { strategy?: unknown }).strategy === "string" &&
        typeof (v as { worldSize?: unknown }).worldSize === "number",
      "must be a plan from plan(model)",
    )
    .optional(),
  checkpoint: z
    .strictObject({ dir: z.string().min(1), every: z.union([z.number().int().min(1), z.literal("auto")]) })
    .optional(),
  resumeFrom: z.string().min(1).optional(),
  validationData: z
    .custom<ValidationData>(
      (v) => v instanceof Dataset || (Array.isArray(v) && v.length === 2 && v.every(isTensorsInput)),
      "must be a Dataset or [x, y] as model.fit takes them: x and y each a tensor, a list of tensors in the model's order, or a map by input (output) name",
    )
    .optional(),
  validationSplit: z.number().gt(0).lt(1).optional(),
  classWeight: z.record(z.string(), z.number()).optional(),
  schedule: z
    .custom<LearningRateSchedule>(
      (v) => typeof v === "function",
      "must be a function (step, epoch, baseRate) => rate, e.g. learningRates.warmupCosine({ warmupSteps, totalSteps })",
    )
    .optional(),
  callbacks: z
    .custom<FitCallbacks>(
      (v) => typeof v === "object" && v !== null,
      "must be callbacks as model.fit takes them: { onEpochEnd: ... }, tf.callbacks.earlyStopping(...), or a list",
    )
    .optional(),
});

export interface ResolvedFitOptions {
  epochs: number;
  initialEpoch: number;
  /** Samples per update: batchSize x accumulate. */
  batchSize: number;
  /** Chunks each replica computes an update's share in (1: one pass). */
  accumulate: number;
  optimizer: OptimizerSpec;
  /** The loss (a model with several outputs: its first output's; `heads` has each). */
  loss: LossName;
  /** A model with several outputs: each output's loss and weight, in the model's output order. */
  heads: Heads | undefined;
  /** The model's compiled metrics, computed by the workers every step. */
  metrics: MetricSpec[];
  /** Where the optimizer and loss came from, for the run's notes. */
  origins: { optimizer: Origin; loss: Origin };
  nonFinite: "stop" | "skip";
  shuffle: boolean;
  seed: number;
  onStep: ((record: StepRecord) => void) | undefined;
  signal: AbortSignal | undefined;
  progress: boolean | undefined;
  /** model.fit's verbose 2: one line per epoch instead of the live display. */
  epochLines: boolean;
  /** Called with each epoch's validation logs (fit() sets it for the display). */
  onValidated?: (epoch: number, logs: Record<string, number>) => void;
  plan: PlanData | undefined;
  /** `cadence`: when the checkpoints are due (kept across a fit run again after a loss). */
  checkpoint: { dir: string; every: number | "auto"; cadence: Cadence } | undefined;
  resumeFrom: string | undefined;
  callbacks: CallbackRun | undefined;
  schedule: LearningRateSchedule | undefined;
  validationData: ValidationData | undefined;
  validationSplit: number | undefined;
  /** The samples validated on at each epoch's end (fit() sets it from validationData or validationSplit). */
  validation?: Dataset;
  classWeight: ClassWeight | undefined;
  /** classWeight as the workers take it, class c's weight at [c] (fit() sets it from the data). */
  classTable?: number[];
}

const DEFAULT_OPTIMIZER: OptimizerSpec = { name: "sgd", learningRate: 0.01 };
const DEFAULT_LOSS: LossName = "categoricalCrossentropy";

/** Checks fit's options; what they leave out comes from model.compile (when a model is given), then the defaults. */
export function resolveFitOptions(options: FitOptions, model?: tf.LayersModel): ResolvedFitOptions {
  const o = parseOrThrow(FitOptionsSchema, options, "fit options");
  const c = model ? readCompiled(model) : undefined;
  const compiledOptimizer = o.optimizer ? undefined : c?.optimizer();
  const compiledLoss = o.loss ? undefined : c?.loss();
  const optimizer = o.optimizer ?? compiledOptimizer ?? DEFAULT_OPTIMIZER;
  const { loss, heads } = resolveHeads(model, o.loss ?? compiledLoss ?? DEFAULT_LOSS, o.lossWeights);
  const origin = (given: unknown, compiled: unknown): Origin =>
    given !== undefined ? "fit options" : compiled !== undefined ? "model.compile" : "default";
  if (o.verbose !== undefined && o.progress !== undefined) {
    throw new ConfigError(`verbose ${o.verbose} and progress ${o.progress} were both given`, {
      hint: "give one: verbose as model.fit's (0, 1, 2), or progress (true, false)",
    });
  }
  if (o.initialEpoch >= o.epochs) {
    throw new ConfigError(`initialEpoch ${o.initialEpoch} is not below epochs ${o.epochs}: there is nothing to train`, {
      hint: `epochs counts from 0 as in model.fit: to train ${o.epochs} more epoch(s) after epoch ${o.initialEpoch - 1}, use epochs: ${o.initialEpoch + o.epochs}`,
    });
  }
  return {
    epochs: o.epochs,
    initialEpoch: o.initialEpoch,
    batchSize: o.batchSize * o.accumulate,
    accumulate: o.accumulate,
    optimizer,
    loss,
    heads,
    metrics: c?.metrics(heads ? heads.map((h) => h.loss) : [loss]) ?? [],
    origins: { optimizer: origin(o.optimizer, compiledOptimizer), loss: origin(o.loss, compiledLoss) },
    nonFinite: o.nonFinite,
    shuffle: o.shuffle,
    seed: o.seed ?? Math.floor(Math.random() * 2 ** 31),
    onStep: o.onStep,
    signal: o.signal,
    progress: o.verbose !== undefined ? o.verbose === 1 : o.progress,
    epochLines: o.verbose === 2,
    plan: o.plan,
    checkpoint: o.checkpoint ? { ...o.checkpoint, cadence: new Cadence(o.checkpoint.every) } : undefined,
    resumeFrom: o.resumeFrom,
    callbacks: o.callbacks && model ? new CallbackRun(o.callbacks, model) : undefined,
    schedule: o.schedule,
    validationData: o.validationData,
    validationSplit: o.validationSplit,
    classWeight: o.classWeight,
  };
}
