import type { WorkerHandle } from "../../cluster/worker-handle";
import type { Dataset } from "../../data/dataset";
import { WorkerLostError, type MeshtrainError } from "../../errors/errors";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../plan/batches";
import type { ResolvedFitOptions } from "../../config/fit-options";
import { pushRecord, roundRecord } from "./records";
import { leadOf, mayStart } from "./ssp";
import type { StepRecord, Departure, PushRecord } from "../../metrics/records";
import type { PsPlan } from "../../plan/plans";
import { awaitAll } from "../../driver/await";
import { FitAborted, type FitContext, type StepDone } from "../../driver/fit-context";

/** A worker's slice of one global batch: the unit of work handed out. */
interface Slice {
  epoch: number;
  order: Uint32Array | null;
  start: number;
  end: number;
}

interface Running {
  slice: Slice;
  clock: number;
  lead: number;
}

interface WorkerState {
  handle: WorkerHandle;
  /** Steps handed to it so far: the clock of its next step. */
  next: number;
  finished: number;
  running: Running[];
  /** Gone: it left, or its step failed and the driver waits to learn whether it left. */
  gone: boolean;
}

type Event =
  | { kind: "done"; w: WorkerState; run: Running; reply: StepDone }
  | { kind: "failed"; w: WorkerState; run: Running; error: unknown }
  | { kind: "departed"; w: WorkerState; error: MeshtrainError }
  | { kind: "undecided"; w: WorkerState; error: unknown };

/** Steps handed to a worker before its last one finished, so it never waits for data. */
const AHEAD = 2;

/**
 * Asynchronous training: each free worker is handed the next slice of data (so a slow worker
 * simply does fewer), pulls, computes and pushes on its own, and the servers apply every push
 * when it arrives. With a staleness bound k, a worker starts a step only while it is at most k
 * steps ahead of the slowest live worker. A worker that leaves is recorded; the slices it was
 * working on go to the others unless the servers already applied them.
 */
export async function runAsync(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  plan: PsPlan,
  t: { fitStart: number; fitStartWall: number },
): Promise<{ history: StepRecord[]; pushes: PushRecord[]; departures: Departure[]; live: WorkerHandle[]; callbackError: FitAborted | undefined }> {
  const n = ctx.workers.length;
  const stepMs = ctx.spec.timeouts.stepMs;
  const grace = Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500);
  const queue: Slice[] = [];
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    const order = epochOrder(dataset.size, o.shuffle, o.seed, epoch);
    for (let i = 0; i < stepsPerEpoch(dataset.size, o.batchSize); i++) {
      const [start, end] = globalBatch(dataset.size, o.batchSize, i);
      let from = start;
      for (const size of replicaSlices(end - start, n)) {
        if (size > 0) queue.push({ epoch, order, start: from, end: from + size });
        from += size;
      }
    }
  }
  queue.reverse(); // popped from the end

  const states: WorkerState[] = ctx.workers.map((handle) => ({ handle, next: 0, finished: 0, running: [], gone: false }));
  const events: Event[] = [];
  let wake: (() => void) | null = null;
  const emit = (e: Event): void => {
    events.push(e);
    wake?.();
  };
  ctx.survive((h, error) => emit({ kind: "departed", w: states[h.rank]!, error }));

  const pushes: PushRecord[] = [];
  const departures: Departure[] = [];
  const history: StepRecord[] = [];
  let round: PushRecord[] = [];
  let roundStart = 0;
  let callbackError: FitAborted | undefined;
  const finishedOf = (): Array<number | null> => states.map((s) => (s.gone ? null : s.finished));

  const dispatch = (): void => {
    for (const w of states) {
      while (!w.gone && !callbackError && queue.length > 0 && w.running.length < AHEAD && mayStart(w.next, finishedOf(), plan.staleness)) {
        const slice = queue.pop()!;
        const run: Running = { slice, clock: w.next++, lead: leadOf(w.next - 1, finishedOf()) };
        w.running.push(run);
        const batch = dataset.gather(slice.order, slice.start, slice.end);
        w.handle.channel
          .request({ type: "step", step: run.clock, epoch: slice.epoch, weight: 1, ps: { clock: run.clock } }, "stepDone", {
            timeoutMs: stepMs,
            waitingFor: `its step ${run.clock} (pull, compute, push)`,
            attachments: [batch.x, batch.y],
          })
          .then(
            (reply) => emit({ kind: "done", w, run, reply }),
            (error: unknown) => emit({ kind: "failed", w, run, error }),
          );
      }
    }
  };

  const record = (p: PushRecord): void => {
    pushes.push(p);
    round.push(p);
    if (round.length < n) return;
    closeRound();
  };
  const closeRound = (): void => {
    if (round.length === 0) return;
    const rec = roundRecord(history.length, round, roundStart);
    roundStart = rec.endMs;
    round = [];
    history.push(rec);
    ctx.setStep(history.length);
    try {
      o.onStep?.(rec);
    } catch (err) {
      callbackError ??= new FitAborted(err);
    }
  };

  const depart = async (w: WorkerState, error: MeshtrainError): Promise<void> => {
    w.gone = true;
    const lost = w.running.splice(0);
    // Which of its pushes did the servers apply before it left? Those are done; the rest go back.
    const answers = lost.length === 0 ? [] : await awaitAll(ctx)(ctx.servers.map((s) => s.channel.request({ type: "applied", pushes: lost.map((r) => ({ rank: w.handle.rank, clock: r.clock })) }, "appliedReply", { timeoutMs: stepMs, waitingFor: "which pushes it applied" })));
    let requeued = 0;
    let alreadyApplied = 0;
    let partial = 0;
    lost.forEach((r, i) => {
      const applied = answers.filter((a) => a.msg.applied[i]).length;
      if (applied === 0) {
        queue.push(r.slice);
        requeued++;
      } else {
        alreadyApplied++;
        if (applied < answers.length) partial++;
      }
    });
    departures.push({ rank: w.handle.rank, address: w.handle.address, atMs: performance.now() - t.fitStart, step: history.length, cause: error.summary, requeued, alreadyApplied, partial });
    if (states.every((s) => s.gone)) {
      throw new WorkerLostError(`every worker left: the last, worker rank ${w.handle.rank}, because ${error.summary}`, {
        details: { rank: w.handle.rank, address: w.handle.address, step: history.length },
        hint: "launch a new cluster; the parameter servers kept every update they applied, but this fit cannot finish",
      });
    }
  };

  dispatch();
  while (states.some((s) => s.running.length > 0) || (queue.length > 0 && !callbackError)) {
    if (events.length === 0) {
      await ctx.guard(new Promise<void>((resolve) => (wake = resolve)));
      wake = null;
    }
    const e = events.shift()!;
    switch (e.kind) {
      case "done": {
        if (e.w.gone) break;
        e.w.running.splice(e.w.running.indexOf(e.run), 1);
        e.w.finished++;
        record(pushRecord(e.reply, e.w.handle, t.fitStartWall, { clock: e.run.clock, epoch: e.run.slice.epoch, samples: e.run.slice.end - e.run.slice.start, lead: e.run.lead, endMs: performance.now() - t.fitStart }));
        break;
      }
      case "failed": {
        if (e.w.gone) break;
        // A failed step is usually the echo of a worker about to be declared lost; anything
        // else (a bad batch, a server's error, a timeout) ends the fit.
        if (e.w.handle.lost) break;
        const w = e.w;
        setTimeout(() => emit({ kind: "undecided", w, error: e.error }), grace).unref();
        break;
      }
      case "undecided":
        if (!e.w.gone && !e.w.handle.lost) throw (await ctx.lossWithin(0)) ?? e.error;
        break;
      case "departed":
        if (!e.w.gone) await depart(e.w, e.error);
        break;
    }
    dispatch();
  }
  closeRound();
  return { history, pushes, departures, live: states.filter((s) => !s.gone).map((s) => s.handle), callbackError };
}
