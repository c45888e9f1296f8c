import { fromTensors } from "./from-tensors";
import { mnist } from "./mnist";
import { synthetic } from "./synthetic";

export { Dataset, type Column } from "./dataset";
export type { DatasetSource } from "./source";
export type { MnistOptions } from "./mnist";
export type { SyntheticOptions } from "./synthetic";

/** Where training data comes from. Every dataset lives in the driver's memory as flat typed arrays. */
export const datasets = Object.freeze({ fromTensors, mnist, synthetic });

/** Rebuilds a dataset from its source, identically in any process. */
export function loadSource(source: import("./source").DatasetSource): import("./dataset").Dataset {
  return source.kind === "mnist"
    ? mnist({ split: source.split, ...(source.limit !== undefined ? { limit: source.limit } : {}) })
    : synthetic({ inputShape: source.inputShape, classes: source.classes, size: source.size, seed: source.seed });
}
