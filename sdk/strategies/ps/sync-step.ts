import { batchAttachments, type Dataset } from "../../data/dataset";
import { replicaRanges, replicaSlices } from "../../plan/batches";
import type { PsPlan } from "../../plan/plans";
import type { PushRecord } from "../../metrics/records";
import type { WorkerHandle } from "../../members/worker-handle";
import { replicasStep } from "../../driver/step-records";
import type { FitContext, StepDone } from "../../driver/fit-context";
import type { IssuedStep } from "../../driver/step-loop";
import type { BatchAt } from "../../driver/epoch-walk";
import { pushRecord } from "./push-records";
import type { SyncElastic, SyncPart } from "./sync-elastic";

interface FitTimes {
  fitStartWall: number;
  fitStart: number;
}

/**
 * One sync step: each worker its slice, its push recorded; the loss weighted by the slices.
 * Elastic: the slices of the workers still there (see SyncElastic), a lost one's computed by another.
 */
export function syncStep(
  ctx: FitContext,
  dataset: Dataset,
  plan: PsPlan,
  t: FitTimes,
  at: BatchAt,
  pushes: PushRecord[],
  elastic: SyncElastic | null,
): IssuedStep {
  const { step, epoch, order, start, end, learningRate } = at;
  const rate = learningRate !== undefined ? { learningRate } : {};
  const send = (w: WorkerHandle, part: SyncPart, standIn: boolean): Promise<StepDone> =>
    w.channel.request(
      {
        type: "step",
        step,
        epoch,
        weight: part.share,
        ps: { clock: step, minVersion: step, ...(standIn ? { standIn: part.rank } : {}) },
        ...rate,
      },
      "stepDone",
      {
        timeoutMs: ctx.spec.timeouts.stepMs,
        waitingFor: standIn ? `step ${step}'s slice of lost worker rank ${part.rank}` : `step ${step}`,
        attachments: batchAttachments(dataset.gather(order, part.start, part.end)),
      },
    );
  const parts = (members: number): SyncPart[] => partsOf(plan, start, end, members);
  let answered: Array<{ part: SyncPart; worker: WorkerHandle }> = [];
  const done = elastic
    ? elastic.run(step, parts, send).then((answers) => ((answered = answers), answers.map((a) => a.reply)))
    : (() => {
        answered = parts(plan.worldSize).map((part) => ({ part, worker: ctx.workers[part.rank]! }));
        return Promise.all(answered.map((a) => send(a.worker, a.part, false)));
      })();
  const summarize: IssuedStep["summarize"] = (replies) => {
    const endMs = performance.now() - t.fitStart;
    replies.forEach((r, i) => {
      const { part, worker } = answered[i]!;
      const samples = part.end - part.start;
      pushes.push(pushRecord(r, worker, t.fitStartWall, { clock: step, epoch, samples, lead: 0, endMs }));
    });
    const workers = answered.map((a) => a.worker);
    return replicasStep(
      replies,
      workers,
      answered.map((a) => a.part.share),
      t.fitStartWall,
    );
  };
  return { samples: end - start, done, summarize };
}

/** The plan's split while every worker is there; an even split of the batch among fewer. */
function partsOf(plan: PsPlan, start: number, end: number, members: number): SyncPart[] {
  if (members === plan.worldSize) return replicaRanges(plan.batch, start, end).map((r, rank) => ({ ...r, rank }));
  let from = start;
  return replicaSlices(end - start, members).map((n, rank) => ({
    rank,
    start: from,
    end: (from += n),
    share: n / (end - start),
  }));
}
