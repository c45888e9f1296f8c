import type { WorkerHandle } from "../members/worker-handle";
import type { StepRecord } from "../metrics/records";
import type { Wiring } from "../plan/wiring";
import { hostRing } from "../plan/host-ring";
import type { StepDone } from "./fit-context";
import { computeEnd, stepOutcome, straggler, workerStep } from "./step-records";

/** A step an elastic fit sent: to whom, with which slices, and how each answered. */
export interface InFlight {
  step: number;
  epoch: number;
  members: WorkerHandle[];
  slices: number[];
  settled: Promise<Array<PromiseSettledResult<StepDone>>>;
  result?: Array<PromiseSettledResult<StepDone>>;
  learningRate?: number;
}

/** One ring of the members, machine by machine and in rank order within one; nobody else is wired. */
export function ringOf(members: readonly WorkerHandle[], size: number): Wiring {
  const sorted = [...members].sort((a, b) => a.rank - b.rank);
  // Members sharing a machine are neighbours, as in a fixed membership's ring (plan/host-ring.ts).
  const ring = hostRing(sorted.map((h) => h.info?.hostname)).order.map((i) => sorted[i]!.rank);
  return { groups: [ring], pipe: Array.from({ length: size }, () => ({ prev: null, next: null })) };
}

/** The record of a step every member answered: its loss the slices' weighted mean over those that completed it. */
export function inFlightRecord(f: InFlight, t: { ms: number; endMs: number; fitStartWall: number }): StepRecord {
  const samples = f.slices.reduce((a, b) => a + b, 0);
  const ok = f
    .result!.map((r, i) => ({ r, w: f.members[i]!, share: f.slices[i]! / samples }))
    .filter(
      (x): x is { r: PromiseFulfilledResult<StepDone>; w: WorkerHandle; share: number } => x.r.status === "fulfilled",
    );
  return {
    step: f.step,
    epoch: f.epoch,
    samples,
    ms: t.ms,
    endMs: t.endMs,
    loss:
      ok.reduce((a, x) => a + x.share * x.r.value.msg.loss, 0) /
      Math.max(
        1e-12,
        ok.reduce((a, x) => a + x.share, 0),
      ),
    workers: ok.map((x) => workerStep(x.r.value, x.w, t.fitStartWall)),
    straggler: straggler(ok.map((x) => computeEnd(x.r.value, x.w))),
    ...stepOutcome(
      ok.map((x) => x.r.value),
      ok.map((x) => x.w.rank),
      ok.map((x) => x.share),
    ),
    ...(f.learningRate !== undefined ? { learningRate: f.learningRate } : {}),
  };
}
