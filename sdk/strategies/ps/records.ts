import type { WorkerHandle } from "../../cluster/worker-handle";
import type { StepRecord, WorkerStepRecord } from "../../config/fit-options";
import type { StepDone } from "../fit-common";

/** One push as the driver recorded it: which parameters it was computed on, and how stale it was. */
export interface PushRecord {
  rank: number;
  /** The worker's own step count when it computed this push, from 0. */
  clock: number;
  epoch: number;
  samples: number;
  /** Mean loss over the slice, on the parameters pulled. */
  loss: number;
  /** The version (updates applied) of server 0's shard it pulled. */
  version: number;
  /** Updates other pushes made to the parameters between this pull and this push (the most over servers). */
  staleness: number;
  /** How many steps ahead of the slowest live worker this worker was when it started (bounded by staleness k). */
  lead: number;
  /** When the worker started it and when the driver heard it was done, in ms since the fit started. */
  startMs: number;
  endMs: number;
  computeMs: number;
  pullMs: number;
  pushMs: number;
  /** Time the servers held the pull back for other workers' pushes (sync). */
  waitMs: number;
  slowdownMs: number;
}

/** A worker that left while the others carried on. */
export interface Departure {
  rank: number;
  address: string;
  /** When the driver learned of it, in ms since the fit started, and the step (round) it was in. */
  atMs: number;
  step: number;
  cause: string;
  /** Slices it was working on, and what became of them: handed to other workers, or already applied by the servers. */
  requeued: number;
  alreadyApplied: number;
  /** Pushes some servers applied and others never received (it died between them). */
  partial: number;
}

/** What a parameter-server fit adds to its run record. */
export interface PsRunRecord {
  mode: "async" | "sync";
  staleness: number | null;
  pushes: PushRecord[];
  departures: Departure[];
  /** Each server's version at the end: the updates it applied. */
  serverVersions: number[];
}

/**
 * One StepRecord per round of `n` pushes (one global batch's worth of samples) in the order they
 * completed: async pushes have no common step, so a round is what the throughput plot and the
 * progress bar count. The straggler is the rank whose pushes in the round took longest on average.
 */
export function roundRecord(step: number, pushes: readonly PushRecord[], startOfRoundMs: number): StepRecord {
  const samples = pushes.reduce((a, p) => a + p.samples, 0);
  const byRank = new Map<number, WorkerStepRecord & { n: number }>();
  for (const p of pushes) {
    const w = byRank.get(p.rank) ?? { rank: p.rank, computeMs: 0, commMs: 0, waitMs: 0, applyMs: 0, startMs: p.startMs, slowdownMs: 0, n: 0 };
    w.computeMs += p.computeMs;
    w.commMs += p.pullMs + p.pushMs - p.waitMs;
    w.waitMs += p.waitMs;
    w.slowdownMs = (w.slowdownMs ?? 0) + p.slowdownMs;
    w.startMs = Math.min(w.startMs, p.startMs);
    w.n++;
    byRank.set(p.rank, w);
  }
  const workers = [...byRank.values()].sort((a, b) => a.rank - b.rank);
  const slowest = workers.reduce((a, w) => ((w.computeMs + w.commMs) / w.n > (a.computeMs + a.commMs) / a.n ? w : a), workers[0]!);
  const endMs = Math.max(...pushes.map((p) => p.endMs));
  return {
    step,
    epoch: pushes[pushes.length - 1]!.epoch,
    loss: samples > 0 ? pushes.reduce((a, p) => a + p.samples * p.loss, 0) / samples : 0,
    samples,
    ms: endMs - startOfRoundMs,
    endMs,
    workers: workers.map(({ n: _n, ...w }) => w),
    straggler: slowest.rank,
  };
}

/** The driver's view of one finished push, from the worker's stepDone. */
export function pushRecord(r: StepDone, w: WorkerHandle, fitStartWall: number, at: { clock: number; epoch: number; samples: number; lead: number; endMs: number }): PushRecord {
  const m = r.msg;
  const ps = m.ps ?? { pulled: [0], staleness: 0, pullMs: 0, pushMs: 0 };
  return {
    rank: w.rank,
    clock: at.clock,
    epoch: at.epoch,
    samples: at.samples,
    loss: m.loss,
    version: ps.pulled[0] ?? 0,
    staleness: ps.staleness,
    lead: at.lead,
    startMs: m.startedAt - w.clockOffsetMs - fitStartWall,
    endMs: at.endMs,
    computeMs: m.computeMs,
    pullMs: ps.pullMs,
    pushMs: ps.pushMs,
    waitMs: m.waitMs,
    slowdownMs: m.slowdownMs ?? 0,
  };
}

