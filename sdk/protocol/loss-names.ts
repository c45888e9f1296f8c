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
