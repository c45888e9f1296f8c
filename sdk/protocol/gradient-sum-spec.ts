import { z } from "zod";
import { OptimizerSpecSchema } from "./optimizer-spec";

/** How many replicas share a sharded state, for a worker's memory check at load. */
const over = z.number().int().positive().max(4096);
/** ZeRO-2 and -3: the layers grouped into buckets of up to this many bytes, each bucket's collectives one (0: a layer each). */
const bucketBytes = z
  .number()
  .int()
  .nonnegative()
  .max(2 ** 50);

/**
 * How a data-parallel replica's gradients become every replica's update (absent: one
 * all-reduce of the whole buffer, DDP's). "zero-1" (ZeRO stage 1): the replica keeps the
 * optimizer state of its ring shard only, reduce-scatters the gradient and all-gathers the
 * weights. "zero-2": its part of each layer's gradient and optimizer state, each layer's
 * gradient reduce-scattered as the backward pass writes it. "zero-3": its part of each layer's
 * weights too, gathering a layer's weights for its forward and backward pass. "local" (local
 * SGD, DiLoCo): steps update the replica alone; the steps marked sync all-reduce the weights'
 * change, which `outer` applies. The kind names the worker's scheme (roles/data/sums/sum-table.ts).
 */
export const GradientSumSpecSchema = z.union([
  z.strictObject({ kind: z.literal("zero-1"), over }),
  z.strictObject({ kind: z.enum(["zero-2", "zero-3"]), over, bucketBytes: bucketBytes.optional() }),
  z.strictObject({ kind: z.literal("local"), outer: OptimizerSpecSchema }),
]);
export type GradientSumSpec = z.output<typeof GradientSumSpecSchema>;

/** The ZeRO stage a sum shards the training state at, as the memory estimate names it (null: not sharded). */
export function shardedStateOf(sum: GradientSumSpec | undefined): "optimizer" | "gradients" | "parameters" | null {
  const kind = sum?.kind;
  return kind === "zero-1" ? "optimizer" : kind === "zero-2" ? "gradients" : kind === "zero-3" ? "parameters" : null;
}
