import type { WorkerHandle } from "../members/worker-handle";
import type { StepRecord, WorkerStepRecord } from "../metrics/records";
import type { StepDone } from "./fit-context";

/** The rank whose computation ended last (the first such, on a tie). */
export function straggler(ends: ReadonlyArray<{ rank: number; end: number }>): number {
  let worst = ends[0]!;
  for (const e of ends) if (e.end > worst.end) worst = e;
  return worst.rank;
}

/** One worker's part of a whole-model step (data parallelism, parameter servers), on the driver's clock. */
export function workerStep(r: StepDone, w: WorkerHandle, fitStartWall: number): WorkerStepRecord {
  const m = r.msg;
  return {
    rank: w.rank,
    computeMs: m.computeMs + m.applyMs,
    commMs: m.commMs,
    waitMs: m.waitMs,
    applyMs: m.applyMs,
    ...(m.slowdownMs ? { slowdownMs: m.slowdownMs } : {}),
    ...(m.sentBytes !== undefined ? { sentBytes: m.sentBytes } : {}),
    ...(m.readbackMs !== undefined ? { readbackMs: m.readbackMs } : {}),
    ...(m.uploadMs !== undefined ? { uploadMs: m.uploadMs } : {}),
    ...(m.collectives ? { collectives: m.collectives } : {}),
    ...(m.slow ? { slow: m.slow } : {}),
    startMs: m.startedAt - w.clockOffsetMs - fitStartWall,
  };
}

/** When a worker's computation of a step ended, on the driver's clock: who the others waited for. */
export function computeEnd(r: StepDone, w: WorkerHandle): { rank: number; end: number } {
  return { rank: w.rank, end: r.msg.startedAt - w.clockOffsetMs + (r.msg.ps?.pullMs ?? 0) + r.msg.computeMs };
}

/**
 * What a step's replies say beyond times: the compiled metrics (each reply's weighted by
 * `shares`, as the loss), where non-finite values were found, and whether the update was dropped.
 */
export function stepOutcome(
  replies: readonly StepDone[],
  ranks: readonly number[],
  shares: readonly number[],
): Pick<StepRecord, "metrics" | "nonFinite" | "skipped"> {
  const out: Pick<StepRecord, "metrics" | "nonFinite" | "skipped"> = {};
  replies.forEach((r, i) => {
    const m = r.msg;
    if (m.metrics) {
      out.metrics ??= {};
      for (const [k, v] of Object.entries(m.metrics)) out.metrics[k] = (out.metrics[k] ?? 0) + shares[i]! * v;
    }
    if (m.nonFinite) (out.nonFinite ??= []).push({ rank: ranks[i]!, ...m.nonFinite });
    if (m.skipped) out.skipped = true;
  });
  return out;
}

/**
 * A whole-model step's summary from every replica's reply (data parallelism, sync parameter
 * servers): the loss and metrics weighted by each replica's share of the batch, each worker's
 * part, and who the others waited for.
 */
export function replicasStep(
  replies: readonly StepDone[],
  workers: readonly WorkerHandle[],
  shares: readonly number[],
  fitStartWall: number,
): Pick<StepRecord, "loss" | "workers" | "straggler" | "metrics" | "nonFinite" | "skipped"> {
  return {
    loss: replies.reduce((a, r, i) => a + shares[i]! * r.msg.loss, 0),
    workers: replies.map((r, rank) => workerStep(r, workers[rank]!, fitStartWall)),
    straggler: straggler(replies.map((r, rank) => computeEnd(r, workers[rank]!))),
    ...stepOutcome(
      replies,
      workers.map((w) => w.rank),
      shares,
    ),
  };
}
