import { z } from "zod";
import { CommHookSpecSchema } from "./comm-hook-spec";
import { GradientSumSpecSchema } from "./gradient-sum-spec";
import { DatasetSourceSchema } from "./dataset-source";
import { id, v } from "./fields";
import { HeadsSchema, LOSS_NAMES } from "./loss-names";
import { MetricSpecSchema } from "./metric-spec";
import { OptimizerSpecSchema } from "./optimizer-spec";
import { TensorSpecSchema } from "./tensor";
import { COMPRESSIONS } from "./wire-formats";

const attachments = z.array(TensorSpecSchema).max(4096);

/**
 * What every load carries, whatever the role: the optimizer and loss by name (never as code),
 * the compiled metrics, how long a step may wait for a peer, and the tensors (weights) that follow.
 */
const loadFields = {
  type: z.literal("load"),
  v,
  id,
  optimizer: OptimizerSpecSchema,
  loss: z.enum(LOSS_NAMES),
  heads: HeadsSchema.optional(),
  /** The model's compiled metrics, computed on each slice every step. */
  metrics: z.array(MetricSpecSchema).max(16).optional(),
  /** How long a role waits for a peer (a neighbour's activation, a server's pull) before it gives up. */
  stepTimeoutMs: z.number().int().positive(),
  /** Fit option classWeight: class c's loss weight at [c], for every class the data has. */
  classWeight: z
    .array(z.number().nonnegative().finite())
    .max(1 << 20)
    .optional(),
  attachments,
};
/** TF.js model topology (model.toJSON()); built with tf.models.modelFromJSON, never evaluated as code. */
const topology = z.record(z.string(), z.unknown());
/** A straggler made on purpose: after computing a step, wait (factor - 1) x the compute time. */
const slowdown = z.number().min(1).max(1000).optional();
/** Gradients all-reduced (data) or pushed (ps) as 16-bit floats, with error feedback. */
const compression = z.enum(COMPRESSIONS).optional();
/** The largest slice of the global batch this worker computes, for its memory check. */
const replicaBatch = z.number().int().positive();
const variableShapes = z
  .array(
    z.strictObject({ index: z.number().int().nonnegative(), shape: z.array(z.number().int().nonnegative()).max(8) }),
  )
  .max(65536);

/** Data parallelism: a replica of the whole model; weights follow as attachments. */
export const LoadReplicaSchema = z.strictObject({
  ...loadFields,
  /** How the gradient travels to the sum: 16-bit with error feedback, or PowerSGD's low-rank factors (absent: whole, in float32). */
  hook: CommHookSpecSchema.optional(),
  /** How the replica's gradients become every replica's update: ZeRO's shards or local rounds (absent: one all-reduce). */
  sum: GradientSumSpecSchema.optional(),
  /** "sync": BatchNormalization layers normalize with the global batch's statistics (all-reduced in rounds each step). */
  batchNorm: z.enum(["sync"]).optional(),
  /**
   * ZeRO-3, "parts": the attachments are only the weights not trained (model.weights' others, in
   * order); the worker builds the rest zeroed, says in "loaded" which ranges of the flat
   * trainable weights it holds, and is sent those ranges' values in "setShard".
   */
  weights: z.literal("parts").optional(),
  role: z.literal("replica"),
  topology,
  replicaBatch,
  /** With feed "workers": the dataset the worker loads itself, and how every epoch is ordered. */
  data: z.strictObject({ source: DatasetSourceSchema, shuffle: z.boolean(), seed: z.number().int() }).optional(),
  slowdown,
  /** Elastic data parallelism: keep the state before each update, to step back after a peer dies. */
  elastic: z.boolean().optional(),
  /** All-reduce the gradient in buckets during the backward pass, where the data plane and step can. */
  overlap: z.boolean().optional(),
  /** Fit option accumulate: each step's slice is computed in this many chunks, their gradients summed before the one all-reduce. */
  accumulate: z.number().int().min(2).max(4096).optional(),
});
/** Model, pipeline and hybrid strategies: the layers this worker holds and its part of the schedule; its weights follow. */
export const LoadStageSchema = z.strictObject({
  ...loadFields,
  role: z.literal("stage"),
  topology,
  stage: z.strictObject({
    index: z.number().int().nonnegative(),
    count: z.number().int().positive(),
    /** Layers [from, to) of the model. */
    from: z.number().int().nonnegative(),
    to: z.number().int().positive(),
    /** The per-sample shape of the activation the stage receives from the one before (stage 0 receives none). */
    inputShape: z.array(z.number().int().positive()).max(8),
    /** The model inputs (by index) this stage reads, sent with each step; the model outputs (by index) it makes and takes the loss of. */
    feeds: z.array(z.number().int().nonnegative().max(63)).max(64),
    heads: z.array(z.number().int().nonnegative().max(63)).max(64),
    /** The stage's part of the schedule, in order: F(m) forwards micro-batch m, B(m) runs its backward. */
    actions: z.array(z.strictObject({ kind: z.enum(["F", "B"]), micro: z.number().int().nonnegative() })).max(2 * 4096),
    microBatches: z.number().int().positive(),
    /** Largest micro-batch, for the memory check. */
    microBatchSize: z.number().int().positive(),
  }),
});
/** Strategy "ps", a worker: its view of every server's shard; the whole model's weights follow. */
export const LoadPsWorkerSchema = z.strictObject({
  ...loadFields,
  role: z.literal("ps-worker"),
  topology,
  replicaBatch,
  mode: z.enum(["async", "sync"]),
  /** For each server, in order, the indices of the trainable variables it holds. */
  shards: z.array(z.array(z.number().int().nonnegative()).max(65536)).min(1).max(1024),
  /** For each server, in order, the indices of the state (float non-trainable weights) it holds. */
  state: z.array(z.array(z.number().int().nonnegative()).max(65536)).max(1024),
  slowdown,
  compression,
  /** Fit option accumulate: each step's slice is computed in this many chunks, their gradients summed before the one push. */
  accumulate: z.number().int().min(2).max(4096).optional(),
});
/** Strategy "ps", a server: its shard; the variables' values, then the state's, follow as attachments. */
export const LoadPsServerSchema = z.strictObject({
  ...loadFields,
  role: z.literal("ps-server"),
  index: z.number().int().nonnegative(),
  mode: z.enum(["async", "sync"]),
  /** Sync: pushes summed per step (one per worker). */
  workers: z.number().int().positive().max(4096),
  /**
   * Async, under a learning-rate schedule: the schedule's rate for each step of the fit, in order.
   * The server applies its update v at rates[floor(v / workers)]: by its own count of updates,
   * a step's worth being one push per worker (the last rate past the end).
   */
  rates: z
    .array(z.number().positive().finite())
    .min(1)
    .max(1 << 20)
    .optional(),
  /** The trainable variables it holds: their index in the model's trainable weights. */
  variables: variableShapes,
  /** The model state it holds (float non-trainable weights, by index in model.nonTrainableWeights). */
  state: variableShapes,
  /** Pushes arrive with 16-bit gradients. */
  compression,
});
/**
 * Loads a model for one role: the worker looks the role up in its table of roles (a name, never
 * code), and each role's fields are required where it needs them.
 */
export const LoadSchema = z.discriminatedUnion("role", [
  LoadReplicaSchema,
  LoadStageSchema,
  LoadPsWorkerSchema,
  LoadPsServerSchema,
]);
export type LoadMessage = z.infer<typeof LoadSchema>;
export type RoleName = LoadMessage["role"];
export type LoadOf<R extends RoleName> = Extract<LoadMessage, { role: R }>;
