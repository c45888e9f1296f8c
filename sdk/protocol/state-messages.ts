import { z } from "zod";
import { id, v } from "./fields";
import { TensorSpecSchema } from "./tensor";

const attachments = z.array(TensorSpecSchema).max(4096);

// Checkpoints: the optimizer's state of a replica, out and back in.
const optimizerStateFields = {
  format: z.enum(["native", "tfjs"]),
  /** One name per attachment, in order. */
  names: z.array(z.string().max(256)).max(65536),
  scalars: z.record(z.string().max(64), z.number().finite()),
  /** A sharded replica's state, laid flat over these [from, to) ranges of the flat parameters. */
  ranges: z
    .array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]))
    .max(65536)
    .optional(),
};
/** `only: "ranges"`: just the ranges a sharded replica holds state for (to send it its part of a checkpoint). */
export const FetchStateSchema = z.strictObject({
  type: z.literal("fetchState"),
  v,
  id,
  only: z.literal("ranges").optional(),
});
export const StateSchema = z.strictObject({
  type: z.literal("state"),
  v,
  re: id,
  ...optimizerStateFields,
  attachments,
});
export const SetStateSchema = z.strictObject({
  type: z.literal("setState"),
  v,
  id,
  ...optimizerStateFields,
  attachments,
});
export const StateSetSchema = z.strictObject({ type: z.literal("stateSet"), v, re: id });
/** A ZeRO-3 replica loaded with weights "parts": the values of its ranges of the flat trainable weights, as one tensor. */
export const SetShardSchema = z.strictObject({
  type: z.literal("setShard"),
  v,
  id,
  ranges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])).max(65536),
  attachments,
});
export const ShardSetSchema = z.strictObject({ type: z.literal("shardSet"), v, re: id });
