import { ConfigError } from "../errors/errors";

/** What a run cost at a price per hour: samples per dollar, the fair comparison between machines. */
export interface CostReport {
  pricePerHour: number;
  /** Wall time of the run the price applies to. */
  seconds: number;
  dollars: number;
  samples: number;
  samplesPerDollar: number;
  /** As the CPU-training article tabulates it. */
  thousandSamplesPerDollar: number;
}

/**
 * Samples per dollar for a run, from the price per hour of everything the run used (all the
 * machines of the cluster): the fair comparison between machines, and between spot and on-demand.
 */
export function cost(samples: number, seconds: number, pricePerHour: number): CostReport {
  if (!(pricePerHour > 0) || !Number.isFinite(pricePerHour)) {
    throw new ConfigError(`pricePerHour ${pricePerHour} must be a positive number of dollars per hour`, {
      hint: "pass the hourly price of all the machines the cluster uses, e.g. run.cost({ pricePerHour: 0.34 })",
    });
  }
  const dollars = (pricePerHour * seconds) / 3600;
  return {
    pricePerHour,
    seconds,
    dollars,
    samples,
    samplesPerDollar: samples / dollars,
    thousandSamplesPerDollar: samples / dollars / 1000,
  };
}
