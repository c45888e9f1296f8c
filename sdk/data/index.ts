import { fromTensors } from "./from-tensors";
import { linear } from "./linear";
import { mnist } from "./mnist";
import { synthetic } from "./synthetic";

export { Dataset, type Column, type Batch, type ColumnNames } from "./dataset";
export type { TensorsInput } from "./from-tensors";
export type { DatasetSource } from "../protocol/dataset-source";
export type { MnistOptions } from "./mnist";
export type { LinearOptions } from "./linear";
export type { SyntheticOptions } from "./synthetic";

/** Where training data comes from. Every dataset lives in the driver's memory as flat typed arrays. */
export const datasets = Object.freeze({
  /** A dataset from two TF.js tensors whose first dimension is the sample (copied once). */
  fromTensors,
  /** The real MNIST digits the `mnist` package ships (about 10,000), normalised to [0, 1]. */
  mnist,
  /** Seeded random inputs of a chosen shape with one-hot classes: the same in every process. */
  synthetic,
  /** Seeded points on a line with noise, for regression. */
  linear,
});

/** Rebuilds a dataset from its source, identically in any process. */
export function loadSource(source: import("../protocol/dataset-source").DatasetSource): import("./dataset").Dataset {
  switch (source.kind) {
    case "mnist":
      return mnist({ split: source.split, ...(source.limit !== undefined ? { limit: source.limit } : {}) });
    case "synthetic":
      return synthetic({
        inputShape: source.inputShape,
        classes: source.classes,
        size: source.size,
        seed: source.seed,
      });
    case "linear":
      return linear({
        size: source.size,
        slope: source.slope,
        intercept: source.intercept,
        noise: source.noise,
        seed: source.seed,
      });
  }
}
