import { fromTensors } from "./from-tensors";
import { mnist } from "./mnist";
import { synthetic } from "./synthetic";

export { Dataset, type Column } from "./dataset";
export type { MnistOptions } from "./mnist";
export type { SyntheticOptions } from "./synthetic";

/** Where training data comes from. Every dataset lives in the driver's memory as flat typed arrays. */
export const datasets = Object.freeze({ fromTensors, mnist, synthetic });
