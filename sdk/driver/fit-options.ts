import type * as tf from "@tensorflow/tfjs";
import { z } from "zod";
import { readCompiled, type Origin } from "../config/compiled";
import { LOSS_NAMES, type LossName } from "../protocol/loss-names";
import { OptimizerSpecSchema, type OptimizerInput, type OptimizerSpec } from "../protocol/optimizer-spec";
import { parseOrThrow } from "../config/zod-problem";
import type { StepRecord } from "../metrics/records";
import type { PlanData } from "../plan/plans";
import type { MetricSpec } from "../protocol/metric-spec";

/** What Cluster.fit takes, as model.fit does where they overlap (epochs, batchSize, shuffle...). */
export interface FitOptions {
  /** Passes over the dataset. Default 1. */
  epochs?: number;
  /** Global batch: samples per step over all replicas; must divide evenly among them. Default 32. */
  batchSize?: number;
  /**
   * By name ("sgd", "momentum", "adam", "rmsprop", "adagrad", "adadelta", "adamax") or name plus config. Default: the optimizer
   * the model was compiled with (its class and settings), else "sgd" with learning rate 0.01.
   */
  optimizer?: OptimizerInput;
  /** A TF.js loss name. Default: the model's compiled loss, else "categoricalCrossentropy". */
  loss?: LossName;
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
  /** Called after every step with its record. */
  onStep?: (record: StepRecord) => void;
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
   * The plan to train with: one from plan() (e.g. with layers placed by hand with place()), made
   * again for this fit's batch and optimizer. Default: the strategy's own plan.
   */
  plan?: PlanData;
  /**
   * Write a checkpoint every `every` steps into `dir` (weights, optimizer state, the step, and
   * the seed that fixes the data order), atomically; the previous one is kept. Strategy "data".
   */
  checkpoint?: { dir: string; every: number };
  /**
   * Continue from a checkpoint: a directory given as checkpoint.dir (its latest) or one
   * checkpoint's own directory. The model gets its weights, the workers its optimizer state, and
   * training resumes at its step with its seed; the result equals a run never interrupted.
   */
  resumeFrom?: string;
}

const FitOptionsSchema = z.strictObject({
  epochs: z.number().int().min(1).max(1_000_000).default(1),
  batchSize: z.number().int().min(1).max(1 << 24).default(32),
  optimizer: z.preprocess((v) => (typeof v === "string" ? { name: v } : v), OptimizerSpecSchema).optional(),
  loss: z.enum(LOSS_NAMES).optional(),
  nonFinite: z.enum(["stop", "skip"]).default("stop"),
  shuffle: z.boolean().default(true),
  seed: z.number().int().min(0).max(2 ** 32 - 1).optional(),
  onStep: z.custom<(record: StepRecord) => void>((v) => typeof v === "function", "must be a function").optional(),
  signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, "must be an AbortSignal (new AbortController().signal)").optional(),
  progress: z.boolean().optional(),
  plan: z
    .custom<PlanData>((v) => typeof v === "object" && v !== null && typeof (v as { strategy?: unknown }).strategy === "string" && typeof (v as { worldSize?: unknown }).worldSize === "number", "must be a plan from plan(model)")
    .optional(),
  checkpoint: z.strictObject({ dir: z.string().min(1), every: z.number().int().min(1) }).optional(),
  resumeFrom: z.string().min(1).optional(),
});

export interface ResolvedFitOptions {
  epochs: number;
  batchSize: number;
  optimizer: OptimizerSpec;
  loss: LossName;
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
  plan: PlanData | undefined;
  checkpoint: { dir: string; every: number } | undefined;
  resumeFrom: string | undefined;
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
  const loss = o.loss ?? compiledLoss ?? DEFAULT_LOSS;
  const origin = (given: unknown, compiled: unknown): Origin => (given !== undefined ? "fit options" : compiled !== undefined ? "model.compile" : "default");
  return {
    epochs: o.epochs,
    batchSize: o.batchSize,
    optimizer,
    loss,
    metrics: c?.metrics(loss) ?? [],
    origins: { optimizer: origin(o.optimizer, compiledOptimizer), loss: origin(o.loss, compiledLoss) },
    nonFinite: o.nonFinite,
    shuffle: o.shuffle,
    seed: o.seed ?? Math.floor(Math.random() * 2 ** 31),
    onStep: o.onStep,
    signal: o.signal,
    progress: o.progress,
    plan: o.plan,
    checkpoint: o.checkpoint,
    resumeFrom: o.resumeFrom,
  };
}
