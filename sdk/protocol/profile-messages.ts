import { z } from "zod";
import { CommHookSpecSchema } from "./comm-hook-spec";
import { GradientSumSpecSchema } from "./gradient-sum-spec";
import { HeadsSchema, LOSS_NAMES } from "./loss-names";
import { OptimizerSpecSchema } from "./optimizer-spec";
import { id, v } from "./fields";
import { TensorSpecSchema } from "./tensor";

const times = z.array(z.number().finite().nonnegative()).max(8);
const ms = z.number().finite().nonnegative();

/** How a replica computes its gradient: the native step, or autodiff and why (a load's reply says it too). */
export const ReplicaStepSchema = z.strictObject({ native: z.boolean(), why: z.string().max(2000).optional() });

/**
 * Driver -> one worker, before a plan predicts: time this model's layers and its replica step
 * on your backend, at these batch sizes (PipeDream's profiling step). The topology is built with
 * tf.models.modelFromJSON, as a load's is, never evaluated as code; the weights are the
 * initializers' own, since only the time matters.
 */
export const ProfileSchema = z.strictObject({
  type: z.literal("profile"),
  v,
  id,
  topology: z.record(z.string(), z.unknown()),
  optimizer: OptimizerSpecSchema,
  loss: z.enum(LOSS_NAMES),
  heads: HeadsSchema.optional(),
  /** Batch sizes to time at, ascending: the plan interpolates between them. */
  batches: z
    .array(
      z
        .number()
        .int()
        .positive()
        .max(1 << 20),
    )
    .min(1)
    .max(8),
  /**
   * Time only the replica step at the first batch, stepping for this long while the other
   * workers on this machine do the same, and reply with the mean step: how much workers that
   * compute at once slow each other (the layers are not timed).
   */
  sharedForMs: z.number().int().positive().max(10_000).optional(),
  /** false: time the replica step alone (a data-parallel plan uses no layer times); the layers' list comes back empty. */
  layers: z.boolean().optional(),
  /** After this long, each timing still to begin runs once, without warm-up or repeats (a fit's profile is bounded by what it can save). */
  budgetMs: z.number().int().positive().max(3_600_000).optional(),
  /** The plan's comm hook: its own work is timed too where it has a probe (PowerSGD's factors, error feedback included), with no peers. */
  hook: CommHookSpecSchema.optional(),
  /** The plan's summing scheme: its own work is timed too where it has a probe (a local-SGD sync's: the weights' change, the outer update), with no peers. */
  sum: GradientSumSpecSchema.optional(),
});

export const ProfiledSchema = z.strictObject({
  type: z.literal("profiled"),
  v,
  re: id,
  batches: z.array(z.number().int().positive()).max(8),
  /** Per layer (numbered as plans number them), ms at each batch: its forward, and its backward alone. */
  layers: z.array(z.strictObject({ forwardMs: times, backwardMs: times })).max(4096),
  /** A whole replica step (forward, loss, backward, update) at each batch, as a data-parallel replica runs it. */
  replicaStepMs: times,
  replicaStep: ReplicaStepSchema,
  /** The hook's own work a step (PowerSGD's: its two power-iteration products, orthonormalization and error feedback), where it has a probe. */
  hookMs: ms.optional(),
  /** The summing scheme's own work (a local-SGD sync's, a sync), where it has a probe. */
  sumMs: ms.optional(),
});

/** Measures the driver's link to a worker: the worker answers as soon as the attachment arrived. */
export const ProbeSchema = z.strictObject({
  type: z.literal("probe"),
  v,
  id,
  attachments: z.array(TensorSpecSchema).max(4096),
});
export const ProbedSchema = z.strictObject({
  type: z.literal("probed"),
  v,
  re: id,
  /** The worker's wall clock when it answered: with a short round trip, its offset from the driver's. */
  clock: z.number().finite(),
  /**
   * Its CPU time (every thread's) since it last answered a probe, ms: what receiving the probe cost
   * it. A tab cannot say.
   */
  cpuMs: z.number().finite().nonnegative().optional(),
});

/**
 * Measures the data ring the workers are wired in: every member all-reduces zeros of each size
 * `repeats` times, in the same order, and answers with each one's time. Sent to every member.
 */
export const RingProbeSchema = z.strictObject({
  type: z.literal("ringProbe"),
  v,
  id,
  elements: z
    .array(
      z
        .number()
        .int()
        .min(1)
        .max(16 * 1024 * 1024),
    )
    .min(1)
    .max(8),
  repeats: z.number().int().min(1).max(32),
  /**
   * Keep each size's array for the next probe that keeps it, as a step keeps its gradient's: the
   * step-shaped rounds (driver/ring-probe.ts). A fresh 1 MiB array each round had its pages
   * faulted in during the all-reduce, which cost a native-plane round 2.5 ms on a 2-core VM.
   */
  keep: z.boolean().optional(),
});
export const RingProbedSchema = z.strictObject({
  type: z.literal("ringProbed"),
  v,
  re: id,
  /** Per size, each all-reduce's ms, from the start of the call to the sum's return. */
  ms: z.array(z.array(ms).max(32)).max(8),
  /** Per size, what each all-reduce cost the member's process in CPU time (every thread's), ms. A tab cannot say. */
  cpuMs: z.array(z.array(ms).max(32)).max(8).optional(),
});

/**
 * How the workers computed each replica's gradient: meshtrain's native step (forward, loss and
 * backward by native kernels on kept arrays, no autodiff tape), or TF.js's autodiff, and why.
 */
export type ReplicaStepChoice = z.infer<typeof ReplicaStepSchema>;
