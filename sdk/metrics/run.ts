import type { WorkerSnapshot } from "../spec/worker-snapshot";
import type { StepRecord } from "../spec/fit-options";
import type { DataParallelPlan } from "../strategies/data/planner";
import { defaultWarmup, median, throughput } from "./throughput";

export interface WorkerSummary {
  rank: number;
  backend: string;
  device: string;
  /** Medians over the steps after warm-up, in ms. */
  computeMs: number;
  commMs: number;
  waitMs: number;
}

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
}

/** The record of one fit: every step, the plan it ran, and the workers it ran on. */
export class TrainingRun {
  constructor(
    readonly history: readonly StepRecord[],
    readonly plan: DataParallelPlan,
    readonly workers: readonly WorkerSnapshot[],
    readonly seed: number,
    readonly epochs: number,
    readonly wallMs: number,
  ) {}

  summary(): RunSummary {
    const h = this.history;
    const warm = defaultWarmup(h.length);
    const window = h.slice(warm);
    return {
      steps: h.length,
      epochs: this.epochs,
      samples: h.reduce((a, s) => a + s.samples, 0),
      wallMs: this.wallMs,
      warmupSteps: warm,
      samplesPerSecond: throughput(h, warm),
      medianStepMs: median(window.map((s) => s.ms)),
      firstLoss: h[0]?.loss ?? NaN,
      finalLoss: h[h.length - 1]?.loss ?? NaN,
      workers: this.workers.map((w) => {
        const per = window.map((s) => s.workers.find((x) => x.rank === w.rank)!).filter(Boolean);
        return {
          rank: w.rank,
          backend: w.info.backend,
          device: w.info.device,
          computeMs: median(per.map((p) => p.computeMs)),
          commMs: median(per.map((p) => p.commMs)),
          waitMs: median(per.map((p) => p.waitMs)),
        };
      }),
    };
  }

  toString(): string {
    const s = this.summary();
    const lines = [
      `${s.steps} steps over ${s.epochs} epoch(s), ${s.samples} samples in ${(s.wallMs / 1000).toFixed(1)} s on ${this.workers.length} worker(s)`,
      `throughput ${s.samplesPerSecond.toFixed(0)} samples/s (after ${s.warmupSteps} warm-up steps), median step ${s.medianStepMs.toFixed(1)} ms`,
      `loss ${s.firstLoss.toFixed(4)} -> ${s.finalLoss.toFixed(4)}`,
      "rank  backend  device  compute ms  comm ms  wait ms  (medians per step)",
      ...s.workers.map(
        (w) =>
          `${String(w.rank).padEnd(6)}${w.backend.padEnd(9)}${w.device.padEnd(8)}${w.computeMs.toFixed(1).padStart(10)}${w.commMs.toFixed(1).padStart(9)}${w.waitMs.toFixed(1).padStart(9)}`,
      ),
    ];
    return lines.join("\n");
  }
}
