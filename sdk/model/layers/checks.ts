import { ModelError } from "../../errors/errors";

/** Refuses an option of a layer that is not a positive integer, naming the layer and the option. */
export function positiveInteger(layer: string, option: string, value: number): void {
  if (!Number.isInteger(value) || value < 1)
    throw new ModelError(`${layer}: ${option} must be a positive integer, not ${value}`);
}
