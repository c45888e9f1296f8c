import type { DataParallelPlan, PipelinePlan } from "../../plan/plans";
import { zeroStage } from "../../plan/memory";
import { stagedShape } from "./stage-choice";

/** ZeRO-2 or -3 as auto's reasons name it. */
function zeroName(plan: DataParallelPlan): string {
  return `ZeRO-${zeroStage(plan.shard!)} (shard: "${plan.shard}")`;
}

/**
 * Where a split into stages and ZeRO-2/3 both fit, the one predicted to train more samples a
 * second: stages leave workers idle in the bubble and hand activations on, ZeRO-2/3 wait for a
 * collective per bucket of layers, and which costs more depends on the model and the links. On notebook
 * 07's setup (4 workers capped at 7 MiB, Adam, batch 64) ZeRO-3 trained at 4170-4246 samples/s
 * and the 2 x 2 hybrid at 2302-2347 (two fits each); the predictions a fit makes (layers timed on
 * a capped worker, ZeRO-3's collectives priced by the measured ring) said 4903-5252 and
 * 3539-4007: both optimistic, the hybrid's more, ranked as measured. Without predictions
 * (a plan of a cluster not launched: no worker has measured its speed) auto keeps the stages,
 * as it did before it ranked them, and says so.
 */
export function fasterOf(
  staged: PipelinePlan,
  zero: DataParallelPlan,
  reasons: readonly string[],
): DataParallelPlan | PipelinePlan {
  const [s, z] = [staged.prediction, zero.prediction];
  if (!s || !z) {
    const why = `${zeroName(zero)} fits too, but auto ranks it against the stages by predicted speed, and neither can be predicted without the workers' measured speeds (plan a launched cluster): auto chose ${stagedShape(staged)}`;
    return { ...staged, reasons: [...reasons, why] };
  }
  const zeroFaster = z.samplesPerSecond > s.samplesPerSecond;
  const ranked = `ranked by predicted speed (${z.basis}): ${zeroName(zero)} ${z.samplesPerSecond.toFixed(0)} samples/s, ${stagedShape(staged)} ${s.samplesPerSecond.toFixed(0)} samples/s`;
  const chose = zeroFaster
    ? `auto chose ${zeroName(zero)}, the faster`
    : `auto chose ${stagedShape(staged)}, the faster`;
  // From FLOPs the two rank unreliably (measured: the hybrid 1.7x too fast, ZeRO-3 2x too slow).
  const untimed =
    !z.timed || !s.timed
      ? `; these predictions come from the model's FLOPs, not timed: \`await cluster.profile(model, { batchSize })\` times the layers and the data ring first, as fit() does before it plans, and the ranking may change`
      : "";
  const why = `${ranked}; ${chose}${untimed}`;
  return zeroFaster ? { ...zero, reasons: [...reasons, why] } : { ...staged, reasons: [...reasons, why] };
}
