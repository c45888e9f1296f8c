import { z } from "zod";

/**
 * Metrics workers compute per step: the TF.js functions (tf.metrics.*) whose mean over a batch
 * combines exactly over slices and steps (weighted by samples), as model.fit's History does.
 */
export const METRIC_FNS = [
  "binaryAccuracy",
  "categoricalAccuracy",
  "sparseCategoricalAccuracy",
  "meanSquaredError",
  "meanAbsoluteError",
  "meanAbsolutePercentageError",
  "categoricalCrossentropy",
  "binaryCrossentropy",
  "cosineProximity",
] as const;
export type MetricFn = (typeof METRIC_FNS)[number];

/** A compiled metric: its key in the history (as model.fit names it) and the function computing it. */
export interface MetricSpec {
  name: string;
  fn: MetricFn;
  /** The model output it is computed on (models with several; default 0). */
  output?: number;
}
export const MetricSpecSchema = z.strictObject({
  name: z.string().min(1).max(128),
  fn: z.enum(METRIC_FNS),
  output: z.number().int().nonnegative().max(63).optional(),
});
