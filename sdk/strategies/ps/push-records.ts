import type { WorkerHandle } from "../../members/worker-handle";
import type { PushRecord, StepRecord, WorkerStepRecord } from "../../metrics/records";
import type { StepDone } from "../../driver/fit-context";

/**
 * One StepRecord per round of `n` pushes (one global batch's worth of samples) in the order they
 * completed: async pushes have no common step, so a round is what the throughput plot and the
 * progress bar count. The straggler is the rank whose pushes in the round took longest on average.
 */
export function roundRecord(step: number, pushes: readonly PushRecord[], startOfRoundMs: number): StepRecord {
  const samples = pushes.reduce((a, p) => a + p.samples, 0);
  const applied = pushes.filter((p) => !p.nonFinite);
  const learned = applied.reduce((a, p) => a + p.samples, 0);
  const byRank = new Map<number, WorkerStepRecord & { n: number }>();
  for (const p of pushes) {
    const w = byRank.get(p.rank) ?? {
      rank: p.rank,
      computeMs: 0,
      commMs: 0,
      waitMs: 0,
      applyMs: 0,
      startMs: p.startMs,
      slowdownMs: 0,
      n: 0,
    };
    w.computeMs += p.computeMs;
    w.commMs += p.pullMs + p.pushMs - p.waitMs;
    w.waitMs += p.waitMs;
    w.slowdownMs = (w.slowdownMs ?? 0) + p.slowdownMs;
    w.startMs = Math.min(w.startMs, p.startMs);
    // A round's bytes: every push the worker made in it.
    if (p.sentBytes !== undefined) w.sentBytes = (w.sentBytes ?? 0) + p.sentBytes;
    w.n++;
    byRank.set(p.rank, w);
  }
  const workers = [...byRank.values()].sort((a, b) => a.rank - b.rank);
  const slowest = workers.reduce(
    (a, w) => ((w.computeMs + w.commMs) / w.n > (a.computeMs + a.commMs) / a.n ? w : a),
    workers[0]!,
  );
  const endMs = Math.max(...pushes.map((p) => p.endMs));
  return {
    step,
    epoch: pushes[pushes.length - 1]!.epoch,
    loss:
      learned > 0
        ? applied.reduce((a, p) => a + p.samples * p.loss, 0) / learned
        : applied.length < pushes.length
          ? NaN
          : 0,
    samples,
    ...metricsOf(applied, learned),
    ...(applied.length < pushes.length
      ? {
          nonFinite: pushes.flatMap((p) => (p.nonFinite ? [p.nonFinite] : [])),
          ...(applied.length === 0 ? { skipped: true } : {}),
        }
      : {}),
    ms: endMs - startOfRoundMs,
    endMs,
    workers: workers.map(({ n: _n, ...w }) => w),
    straggler: slowest.rank,
  };
}

/** The compiled metrics of the applied pushes, weighted by their samples. */
function metricsOf(pushes: readonly PushRecord[], samples: number): { metrics?: Record<string, number> } {
  if (samples === 0 || !pushes.some((p) => p.metrics)) return {};
  const metrics: Record<string, number> = {};
  for (const p of pushes)
    for (const [k, v] of Object.entries(p.metrics ?? {})) metrics[k] = (metrics[k] ?? 0) + (p.samples * v) / samples;
  return { metrics };
}

/** The driver's view of one finished push, from the worker's stepDone. */
export function pushRecord(
  r: StepDone,
  w: WorkerHandle,
  fitStartWall: number,
  at: { clock: number; epoch: number; samples: number; lead: number; endMs: number },
): PushRecord {
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
    ...(m.sentBytes !== undefined ? { sentBytes: m.sentBytes } : {}),
    ...(m.metrics ? { metrics: m.metrics } : {}),
    ...(m.nonFinite ? { nonFinite: { rank: w.rank, ...m.nonFinite } } : {}),
  };
}
