import { formatBytes } from "./memory";
import type { Prediction } from "./predict";
import { median } from "../util/median";

/**
 * How much longer than the one-worker prediction a step must take before the run says it was
 * slower: the cost model is off by tens of percent on CPU (bench/results/pipeline.md), and the
 * demo's 2 workers, a little faster than one in truth, measure within 2% of that prediction.
 */
const PREDICTION_MARGIN = 1.25;

/** What to change when communication outweighs the compute the workers split. */
const REMEDY = "use fewer workers, a larger batch per step, or a model with fewer parameters per unit of compute";

/** Said instead of REMEDY where the compute was estimated, not timed. */
const UNMEASURED =
  "the compute is estimated from the model's FLOPs, not timed, so this comparison is unmeasured: cluster.profile(model, { batchSize }) times it, and a fit's summary says what its steps measured";

/**
 * The plan's warning: `prediction` (N replicas) against `one` (the same global batch on one
 * worker, no all-reduce). Null when N workers are predicted to be faster.
 */
export function predictedSlowerThanOne(o: {
  workers: number;
  gradientBytes: number;
  prediction: Prediction;
  one: Pick<Prediction, "samplesPerSecond" | "computeMs" | "timed">;
}): string | null {
  const { prediction: p, one } = o;
  if (o.workers < 2 || p.samplesPerSecond >= one.samplesPerSecond) return null;
  // An estimate from FLOPs can be off several times over (convolutions, merges): no advice rests on it.
  const then = p.timed && one.timed ? REMEDY : UNMEASURED;
  return (
    `predicted SLOWER than one worker: ${p.samplesPerSecond.toFixed(0)} samples/s on ${o.workers} workers against ${one.samplesPerSecond.toFixed(0)} on one, ` +
    `because each step's all-reduce of ${formatBytes(o.gradientBytes)} (${p.commMs.toFixed(1)} ms) costs more than splitting the batch saves ` +
    `(${one.computeMs.toFixed(1)} ms of compute on one worker, ${p.computeMs.toFixed(1)} ms on each of ${o.workers}); ${then}`
  );
}

/**
 * The run's warning, from what its steps measured, against what one worker would take for the
 * same global batch: `oneWorkerMs`, the plan's prediction from the speeds the workers measured
 * when they joined, when there is one; else `workers` times a replica's measured compute (a
 * generous figure where workers share cores, since each then computed slower than it would alone).
 * Against a prediction the step must be PREDICTION_MARGIN longer; the caller passes only a
 * prediction whose compute was timed (from FLOPs alone it can be off several times over). Null when the cluster was not
 * clearly slower, or with fewer than 3 steps measured after warm-up.
 */
export function measuredSlowerThanOne(o: {
  workers: number;
  gradientBytes: number;
  measuredSteps: number;
  medianStepMs: number;
  ranks: ReadonlyArray<{ computeMs: number; commMs: number; waitMs: number }>;
  oneWorkerMs?: number;
}): string | null {
  if (o.workers < 2 || o.measuredSteps < 3 || o.ranks.length === 0) return null;
  const compute = median(o.ranks.map((r) => r.computeMs));
  const alone = o.oneWorkerMs ?? o.workers * compute;
  if (!(alone > 0) || o.medianStepMs <= alone * (o.oneWorkerMs !== undefined ? PREDICTION_MARGIN : 1)) return null;
  const comm = median(o.ranks.map((r) => r.commMs));
  const wait = median(o.ranks.map((r) => r.waitMs));
  const basis =
    o.oneWorkerMs !== undefined
      ? "predicted from the step timed on a worker"
      : `${o.workers} x ${compute.toFixed(1)} ms`;
  return (
    `SLOWER than one worker would be: a step took ${o.medianStepMs.toFixed(1)} ms (median): ${compute.toFixed(1)} ms computing on each worker, ` +
    `${comm.toFixed(1)} ms all-reducing ${formatBytes(o.gradientBytes)} and ${wait.toFixed(1)} ms waiting, ${(o.medianStepMs / alone).toFixed(1)}x what one worker would take: about ${alone.toFixed(1)} ms ` +
    `for the whole batch (${basis}) and send nothing. Communication per step outweighs the compute it splits${o.oneWorkerMs !== undefined && o.workers * compute > alone ? ", and the workers computed slower than one would alone (sharing cores?)" : ""}: ${REMEDY}`
  );
}
