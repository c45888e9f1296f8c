import * as fs from "node:fs";
import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../data/dataset";
import { echoesLoss, memberLostWithin } from "../../driver/await";
import { readCheckpoint } from "../../driver/checkpoint/store";
import type { FitContext } from "../../driver/fit-context";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { FitAborted } from "../../driver/fit-stop";
import { onceEach } from "../../driver/replayed-callbacks";
import { stepsPerEpoch } from "../../plan/batches";
import { ConfigError, type MeshtrainError } from "../../errors/errors";
import type { WorkerHandle } from "../../members/worker-handle";
import type { MembershipChange, RunRecord, StepRecord } from "../../metrics/records";
import type { PipelinePlan, PlanMethods } from "../../plan/plans";
import { fitPipeline } from "./driver-runtime";

/**
 * Model, pipeline and hybrid fits on a cluster with spares (`.spares(n)`): a lost worker's place
 * is taken by a spare as the same rank (its stage), every stage is loaded again from this fit's
 * last checkpoint (from the start when it has written none yet), and the steps since run again.
 * A synchronous pipeline's result does not depend on who computes a stage, so the fit still
 * equals model.fit; onStep and callbacks see each step once, and the records of steps run again
 * replace the first ones. Without a spare left, the loss ends the fit as before.
 */
export async function fitStagesRecovering(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  plan: PipelinePlan & PlanMethods,
): Promise<RunRecord> {
  if (!ctx.spec.spares) return fitPipeline(ctx, model, dataset, o, plan);
  const checkpoint = checkpointOf(ctx, o);
  const members = (): WorkerHandle[] => ctx.workers.slice(0, plan.worldSize);
  // The cluster no longer fails on a loss: this fit recovers from it, or ends with it. A failed
  // request's wait for the loss it echoes ends with a member's loss, not only the cluster's.
  ctx.survive(() => undefined);
  const lostMember = (): MeshtrainError | undefined => members().find((h) => h.lost)?.lost;
  const recovering: FitContext = {
    ...ctx,
    lossWithin: async (ms) => ((await memberLostWithin(members(), ms)) ? lostMember() : ctx.lossWithin(0)),
  };
  const started = { perf: performance.now(), wall: Date.now() };
  const records = new Map<number, StepRecord>();
  const history = (): StepRecord[] => [...records.values()].sort((a, b) => a.step - b.step);
  const membership: MembershipChange[] = [];
  let shown = -1;
  const watched: ResolvedFitOptions = {
    ...o,
    onStep: (r) => {
      records.set(r.step, r);
      if (r.step > shown) ((shown = r.step), o.onStep?.(r));
    },
    ...(o.callbacks ? { callbacks: onceEach(o.callbacks, stepsPerEpoch(dataset.size, o.batchSize), history) } : {}),
  };
  let attempt = watched;
  for (;;) {
    try {
      const r = await fitPipeline(recovering, model, dataset, attempt, plan);
      return { ...r, history: history(), ...(membership.length > 0 ? { membership } : {}) };
    } catch (err) {
      if (!(await echoesLoss(ctx, members(), err))) throw err;
      const from = ownCheckpoint(checkpoint.dir, started.wall);
      const at = { atMs: performance.now() - started.perf, step: from?.step ?? 0, workers: plan.worldSize };
      membership.push(...substituteLost(ctx, members(), at));
      for (const step of [...records.keys()]) if (step >= (from?.step ?? 0)) records.delete(step);
      attempt = { ...watched, ...(from ? { resumeFrom: from.path } : {}) };
    }
  }
}

/** The fit's checkpoint, which a lost stage is recovered from: refused without one. */
function checkpointOf(ctx: FitContext, o: ResolvedFitOptions): NonNullable<ResolvedFitOptions["checkpoint"]> {
  if (o.checkpoint) return o.checkpoint;
  throw new FitAborted(
    new ConfigError(
      `spares(${ctx.spec.spares}) take a lost stage's place from the fit's last checkpoint, and this fit writes none`,
      {
        hint: "add checkpoint: { dir, every } to fit's options: a loss costs the steps since the last one",
      },
    ),
  );
}

/** Each lost member's place taken by a spare, as the same rank; the changes as the run records them, or the loss when no spare is left. */
function substituteLost(
  ctx: FitContext,
  members: readonly WorkerHandle[],
  at: { atMs: number; step: number; workers: number },
): MembershipChange[] {
  return members
    .filter((h) => h.lost)
    .flatMap((lost) => {
      const spare = ctx.substitute(lost);
      if (!spare) throw lost.lost as MeshtrainError;
      return [
        { change: "left" as const, rank: lost.rank, address: lost.address, cause: lost.lost!.summary, ...at },
        { change: "joined" as const, rank: spare.rank, address: spare.address, ...at },
      ];
    });
}

/** The last checkpoint in `dir` if this fit wrote it (not one an earlier fit left there). */
function ownCheckpoint(dir: string, since: number): { path: string; step: number } | null {
  try {
    const c = readCheckpoint(dir);
    return fs.statSync(c.path).mtimeMs >= since - 1000 ? { path: c.path, step: c.body.step } : null;
  } catch {
    return null;
  }
}
