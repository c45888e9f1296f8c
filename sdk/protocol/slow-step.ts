import { z } from "zod";

/**
 * A worker's word that its slice's compute ran more than twice what the model's FLOPs predict
 * at the speed it measured for a matrix product, and where the time went: the native step's
 * layers, or the kernels TF.js's autodiff dispatched, the slowest first. Sent once, with the step
 * it looked at.
 */
export const SlowStepSchema = z.strictObject({
  measuredMs: z.number().nonnegative().finite(),
  predictedMs: z.number().nonnegative().finite(),
  gflops: z.number().nonnegative().finite(),
  by: z.enum(["layers", "kernels"]),
  top: z
    .array(
      z.strictObject({
        name: z.string().max(256),
        ms: z.number().nonnegative().finite(),
        count: z.number().int().nonnegative().optional(),
      }),
    )
    .max(16),
});
export type SlowStep = z.infer<typeof SlowStepSchema>;
