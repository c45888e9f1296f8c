import { z } from "zod";

/** The loss names TF.js layers accept in model.compile; workers build the loss from the name. */
export const LOSS_NAMES = [
  "meanSquaredError",
  "meanAbsoluteError",
  "meanAbsolutePercentageError",
  "meanSquaredLogarithmicError",
  "squaredHinge",
  "hinge",
  "categoricalHinge",
  "logcosh",
  "categoricalCrossentropy",
  "sparseCategoricalCrossentropy",
  "binaryCrossentropy",
  "kullbackLeiblerDivergence",
  "poisson",
  "cosineProximity",
] as const;
/** A loss by the name model.compile takes; workers build it from the name. */
export type LossName = (typeof LOSS_NAMES)[number];

/** A model with several outputs: each output's loss and its weight in the total (Keras' lossWeights), in the model's output order. */
export const HeadsSchema = z
  .array(z.strictObject({ loss: z.enum(LOSS_NAMES), weight: z.number().nonnegative().finite() }))
  .min(2)
  .max(64);
export type Heads = z.output<typeof HeadsSchema>;
