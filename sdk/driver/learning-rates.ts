import { ConfigError } from "../errors/errors";
import { EpochWalk } from "./epoch-walk";

/**
 * A learning-rate schedule (fit option `schedule`): the rate of a step, from the step (counted
 * over the fit from 0, across epochs, as checkpoints count it), its epoch, and the optimizer's
 * own rate. It runs on the driver; each step carries its rate to every replica, stage and server.
 */
export type LearningRateSchedule = (step: number, epoch: number, baseRate: number) => number;

/** Schedules large-batch runs use, relative to the optimizer's own rate. */
export const learningRates = {
  /**
   * Linear warm-up to the optimizer's rate over `warmupSteps` (step s gets (s + 1) / warmupSteps
   * of it; Goyal et al., 2017), then a cosine decay to `floor` times it at `totalSteps`, held there
   * after (Loshchilov and Hutter, 2017). `floor` defaults to 0.
   */
  warmupCosine(o: { warmupSteps: number; totalSteps: number; floor?: number }): LearningRateSchedule {
    const floor = o.floor ?? 0;
    if (!(
      Number.isInteger(o.warmupSteps) &&
      o.warmupSteps >= 0 &&
      Number.isInteger(o.totalSteps) &&
      o.totalSteps > o.warmupSteps &&
      floor >= 0 &&
      floor <= 1
    )) {
      throw new ConfigError(
        `warmupCosine(${JSON.stringify(o)}): warmupSteps must be a whole number >= 0, totalSteps a whole number above it, floor in [0, 1]`,
        { hint: "e.g. learningRates.warmupCosine({ warmupSteps: 100, totalSteps: 1000 })" },
      );
    }
    return (step, _epoch, base) => {
      if (step < o.warmupSteps) return (base * (step + 1)) / o.warmupSteps;
      const t = Math.min(1, (step - o.warmupSteps) / (o.totalSteps - o.warmupSteps));
      return base * (floor + (1 - floor) * 0.5 * (1 + Math.cos(Math.PI * t)));
    };
  },
  /** The optimizer's rate times `factor` once per `every` steps: step s gets factor^floor(s / every) of it. */
  stepDecay(o: { every: number; factor: number }): LearningRateSchedule {
    if (!(Number.isInteger(o.every) && o.every >= 1 && o.factor > 0 && o.factor <= 1)) {
      throw new ConfigError(`stepDecay(${JSON.stringify(o)}): every must be a whole number >= 1 and factor in (0, 1]`, {
        hint: "e.g. learningRates.stepDecay({ every: 1000, factor: 0.1 })",
      });
    }
    return (step, _epoch, base) => base * o.factor ** Math.floor(step / o.every);
  },
};

/** The rate `schedule` gives a step, checked: a rate that is not a finite positive number stops the fit, naming the step. */
export function rateAt(schedule: LearningRateSchedule, step: number, epoch: number, baseRate: number): number {
  const rate = schedule(step, epoch, baseRate);
  if (typeof rate !== "number" || !Number.isFinite(rate) || rate <= 0) {
    throw new ConfigError(
      `the learning-rate schedule gave ${String(rate)} for step ${step} (epoch ${epoch}); a rate must be a finite number above 0`,
      {
        hint: "return the rate for every step: (step, epoch, baseRate) => number",
        details: { step, epoch },
      },
    );
  }
  return rate;
}

/** Every rate a fit's schedule will give, asked before the first step: a bad one fails the fit before anything trains. */
export function checkSchedule(
  o: {
    schedule: LearningRateSchedule | undefined;
    optimizer: { learningRate: number };
    epochs: number;
    batchSize: number;
    shuffle: boolean;
    seed: number;
    initialEpoch: number;
  },
  datasetSize: number,
): void {
  if (!o.schedule) return;
  const walk = new EpochWalk(datasetSize, o);
  for (let step = walk.first; step < walk.total; step++)
    rateAt(o.schedule, step, Math.floor(step / walk.perEpoch), o.optimizer.learningRate);
}

/** Every step's rate, from the fit's first step to its last: what async servers apply by their own count of updates. */
export function scheduleRates(o: Parameters<typeof checkSchedule>[0], datasetSize: number): number[] | undefined {
  const schedule = o.schedule;
  if (!schedule) return undefined;
  const walk = new EpochWalk(datasetSize, o);
  return Array.from({ length: walk.total - walk.first }, (_, i) =>
    rateAt(schedule, walk.first + i, Math.floor((walk.first + i) / walk.perEpoch), o.optimizer.learningRate),
  );
}

/** The `learningRate` field a step's message carries under a schedule (none without one). */
export function rateField(
  o: { schedule: LearningRateSchedule | undefined; optimizer: { learningRate: number } },
  step: number,
  epoch: number,
): { learningRate?: number } {
  return o.schedule ? { learningRate: rateAt(o.schedule, step, epoch, o.optimizer.learningRate) } : {};
}
