import type { LossName } from "../protocol/loss-names";
import type { MetricFn } from "../protocol/metric-spec";

/** The names model.compile accepts for each function (TF.js spells some several ways). */
const ALIASES: Readonly<Record<string, MetricFn>> = {
  mse: "meanSquaredError",
  MSE: "meanSquaredError",
  meanSquaredError: "meanSquaredError",
  mae: "meanAbsoluteError",
  MAE: "meanAbsoluteError",
  meanAbsoluteError: "meanAbsoluteError",
  mape: "meanAbsolutePercentageError",
  MAPE: "meanAbsolutePercentageError",
  meanAbsolutePercentageError: "meanAbsolutePercentageError",
  categoricalCrossentropy: "categoricalCrossentropy",
  binaryCrossentropy: "binaryCrossentropy",
  cosineProximity: "cosineProximity",
  binaryAccuracy: "binaryAccuracy",
  categoricalAccuracy: "categoricalAccuracy",
  sparseCategoricalAccuracy: "sparseCategoricalAccuracy",
};

/** Metric names meshtrain computes, for error messages. */
export const METRIC_NAMES = ["accuracy", "acc", ...Object.keys(ALIASES)];

/**
 * The function a metric name stands for, by TF.js's own rule for "accuracy": binary when the
 * output has one unit or the loss is binary cross-entropy, sparse with a sparse loss, else
 * categorical. Undefined for a name meshtrain does not compute.
 */
export function metricFn(name: string, loss: LossName, outputUnits: number | null): MetricFn | undefined {
  if (name === "accuracy" || name === "acc") {
    if (outputUnits === 1 || loss === "binaryCrossentropy") return "binaryAccuracy";
    return loss === "sparseCategoricalCrossentropy" ? "sparseCategoricalAccuracy" : "categoricalAccuracy";
  }
  return ALIASES[name];
}
