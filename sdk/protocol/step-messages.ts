import { z } from "zod";
import { id, v } from "./fields";
import { SlowStepSchema } from "./slow-step";
import { TensorSpecSchema } from "./tensor";

const ms = z.number().finite().nonnegative();
const attachments = z.array(TensorSpecSchema).max(4096);
/** A value computed from the user's model and data: NaN and Infinity are what they are (see json.ts). */
const measured = z.custom<number>((x) => typeof x === "number", "must be a number");

/** Driver -> worker: one training step (its slice attached, or a range of the worker's own copy), and the worker's report of it. */
export const StepSchema = z.strictObject({
  type: z.literal("step"),
  v,
  id,
  step: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative(),
  /** This replica's share of the global batch (its slice size / global batch size). */
  weight: z.number().min(0).max(1),
  /** Pipeline strategies: each micro-batch's share of the global batch (sizes come with the tensors). */
  micro: z
    .strictObject({
      sizes: z.array(z.number().int().nonnegative()).max(4096),
      weights: z.array(z.number().min(0).max(1)).max(4096),
    })
    .optional(),
  /** With feed "workers": this replica's slice, as positions [start, end) in the epoch's order. */
  range: z.strictObject({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() }).optional(),
  /** Elastic training: the membership the step was sent for (see configure). */
  generation: z.number().int().nonnegative().optional(),
  /** Under a learning-rate schedule: the rate this step's update uses (replicas, stages, and sync servers through the pushes). */
  learningRate: z.number().positive().finite().optional(),
  /**
   * Local SGD / DiLoCo replicas: "after" this step's own update, all-reduce the weights' change
   * since the last sync; "only" that, with no slice (a fit that stopped between syncs).
   */
  sync: z.enum(["after", "only"]).optional(),
  /**
   * Data parallelism whose fit times both ways (overlap "auto" with no core to spare): this step
   * all-reduces in buckets during the backward pass (true) or once after it (false), whatever
   * the load said. Absent: as loaded.
   */
  overlap: z.boolean().optional(),
  /**
   * Strategy "ps": this worker's own step count, and (sync) the parameter version it must compute
   * on. `standIn`: the slice is that lost rank's, computed on the parameters this worker pulled
   * for its own part of the step and pushed as that rank's (elastic sync servers).
   */
  ps: z
    .strictObject({
      clock: z.number().int().nonnegative(),
      minVersion: z.number().int().nonnegative().optional(),
      standIn: z.number().int().nonnegative().optional(),
    })
    .optional(),
  attachments,
});
export const StepDoneSchema = z.strictObject({
  type: z.literal("stepDone"),
  v,
  re: id,
  step: z.number().int().nonnegative(),
  /** Mean loss over this replica's slice. */
  loss: measured,
  /** The compiled metrics over the same samples, by their history names. */
  metrics: z.record(z.string().max(64), measured).optional(),
  /** This worker found NaN or Infinity in the step: in its input batch, its loss, or the gradient of a variable. */
  nonFinite: z
    .strictObject({
      where: z.enum(["input", "loss", "gradient", "compression"]),
      variable: z.string().max(256).optional(),
    })
    .optional(),
  /** The step's update was not applied, on this worker nor on any other (a worker found a non-finite value). */
  skipped: z.boolean().optional(),
  computeMs: ms,
  commMs: ms,
  waitMs: ms,
  applyMs: ms,
  /** When the worker started computing this step: its wall clock, in ms since the Unix epoch. */
  startedAt: z.number().finite(),
  /** Pipeline strategies: when each action ran, in ms from startedAt, and the most micro-batches held at once. */
  actions: z
    .array(z.strictObject({ kind: z.enum(["F", "B"]), micro: z.number().int().nonnegative(), start: ms, end: ms }))
    .max(65536)
    .optional(),
  inFlightMax: z.number().int().nonnegative().optional(),
  /** ZeRO-2 and -3: each layer's all-gather and reduce-scatter (layer: the index among layers with weights), in ms from startedAt. */
  collectives: z
    .array(
      z.strictObject({
        kind: z.enum(["all-gather", "reduce-scatter"]),
        layer: z.number().int().nonnegative(),
        last: z.number().int().nonnegative().optional(),
        start: ms,
        end: ms,
      }),
    )
    .max(65536)
    .optional(),
  /** Time spent waiting on purpose (a slowdown), part of computeMs. */
  slowdownMs: ms.optional(),
  /** Bytes this worker sent in the step's all-reduce or push (headers included). */
  sentBytes: z.number().nonnegative().optional(),
  /** Data parallelism: the step's all-reduce went in buckets during the backward pass. */
  overlapped: z.literal(true).optional(),
  /** A worker on a GPU: time reading the step's results back from the device, and handing the update to it (part of computeMs and applyMs). */
  readbackMs: ms.optional(),
  uploadMs: ms.optional(),
  /** The worker's slice ran more than twice what its FLOPs predict: where the time went (once a fit). */
  slow: SlowStepSchema.optional(),
  /** Strategy "ps": the version pulled from each server, the most updates the push missed, and the time to pull and push. */
  ps: z
    .strictObject({
      pulled: z.array(z.number().int().nonnegative()).max(1024),
      staleness: z.number().int().nonnegative(),
      pullMs: ms,
      pushMs: ms,
    })
    .optional(),
});
