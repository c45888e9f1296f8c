import { z } from "zod";
import { id, v } from "./fields";
import { TensorSpecSchema } from "./tensor";

/**
 * Driver -> a data-parallel replica, at an epoch's end: evaluate the model as it now is on this
 * shard of the validation data (attached inputs and targets), in inference mode, `batchSize` samples at a
 * time, as model.fit's validation does.
 */
export const EvaluateSchema = z.strictObject({
  type: z.literal("evaluate"),
  v,
  id,
  batchSize: z
    .number()
    .int()
    .positive()
    .max(1 << 20),
  /**
   * A pipeline stage: the shard's samples (a stage may get no tensor of it) and the number its
   * activations between stages are sent under (above any training step's).
   */
  stage: z
    .strictObject({
      samples: z
        .number()
        .int()
        .nonnegative()
        .max(1 << 30),
      seq: z
        .number()
        .int()
        .min(2 ** 31)
        .max(2 ** 32 - 1),
    })
    .optional(),
  /** ZeRO-3: the batches every replica runs, its layers gathered for each (the most any replica's shard needs). */
  rounds: z
    .number()
    .int()
    .nonnegative()
    .max(1 << 30)
    .optional(),
  /** One tensor per model input, then one per output (a pipeline stage: the inputs it reads and the targets of the outputs it makes). */
  attachments: z.array(TensorSpecSchema).max(128),
});

/** The shard's sums, so the driver can weigh shards by size: the loss over its samples (no regularizers, as model.evaluate), and each compiled metric. */
export const EvaluatedSchema = z.strictObject({
  type: z.literal("evaluated"),
  v,
  re: id,
  samples: z.number().int().nonnegative(),
  lossSum: z.number(),
  metricSums: z.record(z.string().max(100), z.number()),
});
