import type { DataParallelPlan } from "../../plan/plans";
import type { WorkerHandle } from "../../members/worker-handle";
import type { StepRecord } from "../../metrics/records";
import type { FitContext } from "../../driver/fit-context";
import { awaitAll } from "../../driver/await";

/**
 * Local SGD / DiLoCo: whether the replicas sync after step `step` (counted across epochs):
 * after every `every` steps of an epoch, and at its last, so that each epoch ends (validation,
 * callbacks, checkpoints of the History) with one model.
 */
export function syncsAfter(plan: DataParallelPlan, perEpoch: number, step: number): { sync?: "after" } {
  if (!plan.sync) return {};
  const inEpoch = step % perEpoch;
  return (inEpoch + 1) % plan.sync.every === 0 || inEpoch === perEpoch - 1 ? { sync: "after" } : {};
}

/**
 * A fit that stopped between syncs (asked to, or a callback's stopTraining) leaves replicas
 * that differ: one more sync, with no slice, gives them and the model the mean of their work.
 */
export async function syncIfBetween(
  ctx: FitContext,
  plan: DataParallelPlan,
  perEpoch: number,
  members: readonly WorkerHandle[],
  history: readonly StepRecord[],
): Promise<void> {
  const last = history[history.length - 1];
  if (!plan.sync || !last || syncsAfter(plan, perEpoch, last.step).sync) return;
  const waiting = { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: `the sync after step ${last.step}` };
  await awaitAll(ctx)(
    members.map((w) =>
      w.channel.request(
        { type: "step", step: last.step, epoch: last.epoch, weight: 0, sync: "only" },
        "stepDone",
        waiting,
      ),
    ),
  );
}
