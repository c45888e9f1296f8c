import { z } from "zod";
import { id, v } from "./fields";
import { TensorSpecSchema } from "./tensor";

/**
 * Driver -> a data-parallel replica, at an epoch's end: evaluate the model as it now is on this
 * shard of the validation data (attached inputs and targets), in inference mode, `batchSize` samples at a
 * time, as model.fit's validation does.
 */
export const EvaluateSchema = z.strictObject({
  type: z.literal("evaluate"), v, id,
  batchSize: z.number().int().positive().max(1 << 20),
  /** One tensor per model input, then one per output. */
  attachments: z.array(TensorSpecSchema).max(128),
});

/** The shard's sums, so the driver can weigh shards by size: the loss over its samples (no regularizers, as model.evaluate), and each compiled metric. */
export const EvaluatedSchema = z.strictObject({
  type: z.literal("evaluated"), v, re: id,
  samples: z.number().int().nonnegative(),
  lossSum: z.number(),
  metricSums: z.record(z.string().max(100), z.number()),
});
