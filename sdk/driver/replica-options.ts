import type { Dataset } from "../data/dataset";
import { ConfigError } from "../errors/errors";
import { FitAborted } from "./fit-stop";

/**
 * Fit options some fits cannot carry out: validation (async parameter servers have no epoch end
 * at which every worker holds the same weights) and gradient accumulation (each data-parallel
 * replica computes its share in chunks). Those fits refuse them before anything is sent, naming
 * what to use.
 */
export function refuseValidation(o: { validation?: Dataset }, where: string): void {
  if (!o.validation) return;
  throw new FitAborted(
    new ConfigError(`validationData and validationSplit are not evaluated under ${where}`, {
      hint: 'strategies "data" (elastic too), "ps" (sync), "model", "pipeline" and "hybrid" validate each epoch; or evaluate the trained model yourself (model.evaluate)',
    }),
  );
}

export function refuseAccumulation(o: { accumulate: number }, where: string, hint: string): void {
  if (o.accumulate > 1) throw new FitAborted(new ConfigError(`accumulate ${o.accumulate}: gradient accumulation is done by data-parallel replicas; ${where} has none`, { hint }));
}
