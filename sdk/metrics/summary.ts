import type { Plan } from "../plan/plans";
import type { RunRecord } from "./records";
import { stragglers, type StragglerSummary } from "./stragglers";
import { defaultWarmup, throughput } from "./throughput";
import { median } from "../util/median";

/** One rank's median step, split into computing, communicating and waiting, in ms. */
export interface WorkerSummary {
  rank: number;
  backend: string;
  device: string;
  /** Medians over the steps after warm-up, in ms. */
  computeMs: number;
  commMs: number;
  waitMs: number;
}

/** A run in numbers: throughput, median step time, each rank's split, stragglers, measured after warm-up. */
export interface RunSummary {
  steps: number;
  epochs: number;
  samples: number;
  /** Wall time of the whole fit at the driver, including loading the model on the workers. */
  wallMs: number;
  warmupSteps: number;
  /** Samples per second over the steps after warm-up. */
  samplesPerSecond: number;
  medianStepMs: number;
  firstLoss: number;
  finalLoss: number;
  workers: WorkerSummary[];
  stragglers: StragglerSummary;
  /** Pipeline strategies: the median measured share of stage time spent idle per step. */
  bubble: number | null;
  /** What the plan predicted, when the workers' speeds were measured, beside what was measured. */
  predicted: { samplesPerSecond: number; stepMs: number; bubble: number } | null;
}

/** The run's measures: throughput after warm-up, per-rank medians, stragglers, bubble, and what was predicted. */
export function summarize(
  record: Pick<RunRecord, "history" | "workers" | "epochs" | "wallMs"> & { plan: Pick<Plan, "prediction"> },
): RunSummary {
  const h = record.history;
  const warm = defaultWarmup(h.length);
  const window = h.slice(warm);
  const prediction = record.plan.prediction;
  return {
    steps: h.length,
    epochs: record.epochs,
    samples: h.reduce((a, s) => a + s.samples, 0),
    wallMs: record.wallMs,
    warmupSteps: warm,
    samplesPerSecond: throughput(h, warm),
    medianStepMs: median(window.map((s) => s.ms)),
    firstLoss: h[0]?.loss ?? NaN,
    finalLoss: h[h.length - 1]?.loss ?? NaN,
    workers: record.workers.map((w) => {
      const per = window.flatMap((s) => s.workers.filter((x) => x.rank === w.rank));
      return {
        rank: w.rank,
        backend: w.info.backend,
        device: w.info.device,
        computeMs: median(per.map((p) => p.computeMs)),
        commMs: median(per.map((p) => p.commMs)),
        waitMs: median(per.map((p) => p.waitMs)),
      };
    }),
    stragglers: stragglers(window.length > 0 ? window : h),
    bubble: window.some((s) => s.bubble !== undefined) ? median(window.map((s) => s.bubble ?? 0)) : null,
    predicted: prediction
      ? { samplesPerSecond: prediction.samplesPerSecond, stepMs: prediction.stepMs, bubble: prediction.bubble }
      : null,
  };
}
