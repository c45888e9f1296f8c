import { z } from "zod";
import { id, v } from "./fields";
import { TensorSpecSchema } from "./tensor";
import { COMPRESSIONS } from "./wire-formats";

const ms = z.number().finite().nonnegative();
const attachments = z.array(TensorSpecSchema).max(4096);

// Worker -> parameter server, on the worker's "ps" link.
/** Asks for the server's shard; sync waits until the server's version reaches minVersion. */
export const PullSchema = z.strictObject({
  type: z.literal("pull"),
  v,
  id,
  rank: z.number().int().nonnegative(),
  minVersion: z.number().int().nonnegative().optional(),
});
export const PulledSchema = z.strictObject({
  type: z.literal("pulled"),
  v,
  re: id,
  version: z.number().int().nonnegative(),
  /** How long the server held the pull back, waiting for the version asked for (sync). */
  waitedMs: ms,
  attachments,
});
/** A gradient for the server's shard, computed on parameters of version `pulled`. */
export const PushSchema = z.strictObject({
  type: z.literal("push"),
  v,
  id,
  rank: z.number().int().nonnegative(),
  clock: z.number().int().nonnegative(),
  pulled: z.number().int().nonnegative(),
  /** The gradient's values come as 16-bit floats, packed two to an int32, then the rest as float32. */
  compression: z.enum(COMPRESSIONS).optional(),
  /** Sync mode under a learning-rate schedule: the rate of the step this push belongs to. */
  learningRate: z.number().positive().finite().optional(),
  /** Made by another worker for lost worker `rank`: a server that has that rank's push of this clock already acknowledges it and adds nothing. */
  standIn: z.literal(true).optional(),
  attachments,
});
export const PushedSchema = z.strictObject({
  type: z.literal("pushed"),
  v,
  re: id,
  /** The server's version after this push (async), or the version its step will make (sync). */
  version: z.number().int().nonnegative(),
  /** Updates applied between the pull and this push: how stale the gradient was. */
  staleness: z.number().int().nonnegative(),
});
/** Driver -> parameter server: which of these pushes it applied (after a worker left mid-step). */
export const AppliedSchema = z.strictObject({
  type: z.literal("applied"),
  v,
  id,
  pushes: z
    .array(z.strictObject({ rank: z.number().int().nonnegative(), clock: z.number().int().nonnegative() }))
    .max(4096),
});
export const AppliedReplySchema = z.strictObject({
  type: z.literal("appliedReply"),
  v,
  re: id,
  applied: z.array(z.boolean()).max(4096),
  version: z.number().int().nonnegative(),
});
/**
 * Driver -> sync parameter server, at a step boundary: from the next step on, the pushes of a
 * step are these workers' (ranks, summed in this order). Elastic sync servers after a loss.
 */
export const RegroupSchema = z.strictObject({
  type: z.literal("regroup"),
  v,
  id,
  members: z.array(z.number().int().nonnegative()).min(1).max(4096),
});
export const RegroupedSchema = z.strictObject({
  type: z.literal("regrouped"),
  v,
  re: id,
  version: z.number().int().nonnegative(),
});
