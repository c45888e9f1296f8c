import type { Dataset } from "../data/dataset";
import { ConfigError } from "../errors/errors";
import { FitAborted } from "./fit-stop";

/**
 * Fit options only data-parallel replicas carry out: validation (each replica evaluates a shard
 * with the whole model) and gradient accumulation (each replica computes its share in chunks).
 * Fits without such replicas refuse them before anything is sent, naming what to use.
 */
export function refuseValidation(o: { validation?: Dataset }, where: string): void {
  if (!o.validation) return;
  throw new FitAborted(
    new ConfigError(`validationData and validationSplit are evaluated by data-parallel replicas; ${where} has none yet`, {
      hint: 'train with strategy("data") to validate each epoch, or evaluate the trained model yourself (model.evaluate)',
    }),
  );
}

export function refuseAccumulation(o: { accumulate: number }, where: string, hint: string): void {
  if (o.accumulate > 1) throw new FitAborted(new ConfigError(`accumulate ${o.accumulate}: gradient accumulation is done by data-parallel replicas; ${where} has none`, { hint }));
}
