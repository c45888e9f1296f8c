// What bench:network writes of one row (a link, model, peer and variant), and how its ratios are
// read: by the benchmark's tables and by bench/targets.ts alike.
import { median, type Json } from "../common";

export type Model = "mlp" | "cnn" | "mlp10m";

export interface Row extends Json {
  link: string;
  model: Model;
  peer: string;
  variant: string;
  runs: number[];
  samplesPerSecond: number;
  predicted: number | null;
  /** Whether the prediction rests on the replica's step timed on a worker (false: on FLOPs; absent in older results). */
  timed?: boolean;
  sentBytesPerStep: number | null;
  /** What each run that did not finish printed. */
  failures: string[];
  /** meshtrain's runs that finished, each beside its own plan's prediction (absent in results before 2026-11-29). */
  rounds?: RoundDetail[];
}

/** One run: samples/s and the slowest worker's median compute (ms), measured and as its plan predicted them. */
export interface RoundDetail extends Json {
  measured: number;
  predicted: number | null;
  computeMs: number | null;
  predictedComputeMs: number | null;
}

/**
 * Predicted / measured, the median of each run's own (its plan timed the step and probed the links
 * minutes apart from the other runs', on a machine whose speed moves between them); a row of older
 * results, without its runs' predictions: the last run's prediction over the median.
 */
export function predictedOver(r: Row, sps: number): number | null {
  const own = (r.rounds ?? []).flatMap((d) => (d.predicted !== null ? [d.predicted / d.measured] : []));
  return own.length > 0 ? median(own) : r.predicted !== null ? r.predicted / sps : null;
}

/** Measured / predicted compute, the median of the runs' own; null where no run's plan priced it. */
export function computeOver(r: Row): number | null {
  const own = (r.rounds ?? []).flatMap((d) => (d.computeMs !== null && d.predictedComputeMs ? [d.computeMs / d.predictedComputeMs] : []));
  return own.length > 0 ? median(own) : null;
}
