import type { WorkerHandle } from "../cluster/worker-handle";
import type { Dataset } from "../data/dataset";
import { WorkerLostError, type MeshtrainError } from "../errors/errors";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../plan/batches";
import type { ResolvedFitOptions } from "../config/fit-options";
import type { Tensorlike } from "../protocol/tensor";
import type { MembershipChange, StepRecord } from "../metrics/records";
import { awaitAll } from "./await";
import { computeEnd, straggler, workerStep } from "./step-records";
import { FitAborted, type FitContext, type StepDone } from "./fit-context";
import type { Wiring } from "../plan/wiring";

interface InFlight {
  step: number;
  epoch: number;
  members: WorkerHandle[];
  slices: number[];
  settled: Promise<Array<PromiseSettledResult<StepDone>>>;
  result?: Array<PromiseSettledResult<StepDone>>;
}

/** One ring of the members, in rank order; nobody else is wired. */
function ringOf(members: readonly WorkerHandle[], size: number): Wiring {
  return { groups: [members.map((h) => h.rank).sort((a, b) => a - b)], pipe: Array.from({ length: size }, () => ({ prev: null, next: null })) };
}

export interface ElasticHooks {
  /** Loads the model on a worker that joins, with these weights. */
  load(worker: WorkerHandle, weights: Tensorlike[]): Promise<void>;
}

/**
 * Elastic data parallelism: the step loop of synchronous data parallelism that survives lost
 * workers and admits new ones. When a member is lost, the others are re-wired as a new
 * membership (steps sent for the old one are dropped unrun), each reports how many updates it
 * applied, those one ahead step back, and training goes on from the last step every survivor
 * completed, its batch shared among them. A worker added with cluster.add() gets a member's
 * weights and optimizer state and joins at a step boundary. Below minWorkers the fit fails
 * with the loss that took it there.
 */
export async function runElastic(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  minWorkers: number,
  t: { fitStart: number; fitStartWall: number; startStep: number },
  hooks: ElasticHooks,
): Promise<{ history: StepRecord[]; membership: MembershipChange[]; members: WorkerHandle[]; callbackError: FitAborted | undefined }> {
  const all = awaitAll(ctx);
  const stepMs = ctx.spec.timeouts.stepMs;
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  const total = o.epochs * perEpoch;
  const orders = new Map<number, Uint32Array | null>();
  const orderOf = (epoch: number): Uint32Array | null => {
    if (!orders.has(epoch)) orders.set(epoch, epochOrder(dataset.size, o.shuffle, o.seed, epoch));
    return orders.get(epoch)!;
  };

  let members = [...ctx.workers];
  /** The global step each member was at when it was loaded: its applied count starts there. */
  const base = new Map<number, number>(members.map((h) => [h.rank, t.startStep]));
  const membership: MembershipChange[] = [];
  const history: StepRecord[] = [];
  const joiners: WorkerHandle[] = [];
  let generation = 0;
  let callbackError: FitAborted | undefined;
  let wake: (() => void) | null = null;
  let departures = 0;
  const nudge = (): void => wake?.();
  ctx.survive(() => {
    departures++;
    nudge();
  });
  ctx.admit((h) => {
    joiners.push(h);
    nudge();
  });

  let done = t.startStep;
  let next = t.startStep;
  let inflight: InFlight[] = [];
  let lastEnd = performance.now();

  const issue = (step: number): void => {
    const epoch = Math.floor(step / perEpoch);
    const [start, end] = globalBatch(dataset.size, o.batchSize, step % perEpoch);
    const count = end - start;
    const slices = replicaSlices(count, members.length);
    let from = start;
    const requests = members.map((w, i) => {
      const batch = dataset.gather(orderOf(epoch), from, from + slices[i]!);
      from += slices[i]!;
      return w.channel.request({ type: "step", step, epoch, weight: slices[i]! / count, generation }, "stepDone", {
        timeoutMs: stepMs,
        waitingFor: `step ${step}`,
        attachments: [batch.x, batch.y],
      });
    });
    const f: InFlight = { step, epoch, members: [...members], slices, settled: Promise.allSettled(requests) };
    void f.settled.then((r) => {
      f.result = r;
      nudge();
    });
    inflight.push(f);
  };

  const record = (f: InFlight): void => {
    const now = performance.now();
    const samples = f.slices.reduce((a, b) => a + b, 0);
    const ok = f.result!.map((r, i) => ({ r, w: f.members[i]!, share: f.slices[i]! / samples })).filter((x): x is { r: PromiseFulfilledResult<StepDone>; w: WorkerHandle; share: number } => x.r.status === "fulfilled");
    const rec: StepRecord = {
      step: f.step,
      epoch: f.epoch,
      samples,
      ms: now - lastEnd,
      endMs: now - t.fitStart,
      loss: ok.reduce((a, x) => a + x.share * x.r.value.msg.loss, 0) / Math.max(1e-12, ok.reduce((a, x) => a + x.share, 0)),
      workers: ok.map((x) => workerStep(x.r.value, x.w, t.fitStartWall)),
      straggler: straggler(ok.map((x) => computeEnd(x.r.value, x.w))),
    };
    lastEnd = now;
    history.push(rec);
    ctx.setStep(f.step + 1);
    try {
      o.onStep?.(rec);
    } catch (err) {
      callbackError ??= new FitAborted(err);
    }
  };

  const rewire = async (): Promise<void> => {
    generation++;
    await ctx.connect(ringOf(members, ctx.workers.length), { members, generation });
  };

  /** After a loss: re-form without the lost, let every old step end, go back to what all completed. */
  const recover = async (): Promise<void> => {
    const lost = members.filter((h) => h.lost);
    members = members.filter((h) => !h.lost);
    for (const h of lost) {
      membership.push({ change: "left", rank: h.rank, address: h.address, atMs: performance.now() - t.fitStart, step: done, cause: h.lost!.summary, workers: members.length });
    }
    if (members.length < minWorkers) {
      const first = lost[0]!.lost!;
      throw new WorkerLostError(`${first.summary}; ${members.length} worker(s) remain, fewer than elastic minWorkers ${minWorkers}`, {
        details: first.details,
        hint: `lower minWorkers, or add workers with cluster.add() before too many are lost`,
      });
    }
    await rewire();
    await Promise.all(inflight.map((f) => f.settled));
    const reported = await all(members.map((h) => h.channel.request({ type: "rewind" }, "rewound", { timeoutMs: stepMs, waitingFor: "how many steps it applied" })));
    const at = members.map((h, i) => base.get(h.rank)! + reported[i]!.msg.applied);
    const target = Math.min(...at);
    // Steps every survivor completed after `done` stand: record them from the replies there are.
    for (const f of inflight) if (f.step >= done && f.step < target) record(f);
    inflight = [];
    await all(
      members.flatMap((h, i) =>
        at[i]! > target ? [h.channel.request({ type: "rewind", to: reported[i]!.msg.applied - (at[i]! - target) }, "rewound", { timeoutMs: stepMs, waitingFor: "stepping back one update" })] : [],
      ),
    );
    done = next = target;
  };

  /** At a step boundary: the joiners get a member's weights and optimizer state, then the ring is re-formed. */
  const admit = async (): Promise<void> => {
    const source = members[0]!;
    const [weights] = await all([source.channel.request({ type: "fetchWeights" }, "weights", { timeoutMs: stepMs, waitingFor: "the weights for a joining worker" })]);
    const [state] = await all([source.channel.request({ type: "fetchState" }, "state", { timeoutMs: stepMs, waitingFor: "the optimizer state for a joining worker" })]);
    for (const h of joiners.splice(0)) {
      await hooks.load(h, weights!.attachments);
      await all([
        h.channel.request({ type: "setState", format: state!.msg.format, names: state!.msg.names, scalars: state!.msg.scalars }, "stateSet", {
          timeoutMs: stepMs,
          waitingFor: "the optimizer state to load",
          attachments: state!.attachments,
        }),
      ]);
      base.set(h.rank, done);
      members = [...members, h].sort((a, b) => a.rank - b.rank);
      membership.push({ change: "joined", rank: h.rank, address: h.address, atMs: performance.now() - t.fitStart, step: done, workers: members.length });
    }
    await rewire();
  };

  try {
    await rewire();
    while (done < total && !callbackError) {
      if (departures > 0 || members.some((h) => h.lost)) {
        departures = 0;
        await recover();
        continue;
      }
      if (joiners.length > 0 && inflight.length === 0) {
        await admit();
        continue;
      }
      while (joiners.length === 0 && next < total && next - done < 2) issue(next++);
      const head = inflight[0]!;
      if (!head.result) {
        await ctx.guard(new Promise<void>((resolve) => (wake = resolve)));
        wake = null;
        continue;
      }
      const failed = head.result.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) {
        // Usually the echo of a worker about to be declared lost; anything else ends the fit.
        const grace = Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500);
        const deadline = performance.now() + grace;
        while (!members.some((h) => h.lost) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        if (!members.some((h) => h.lost)) throw (await ctx.lossWithin(0)) ?? (failed.reason as MeshtrainError);
        continue;
      }
      inflight.shift();
      record(head);
      done++;
    }
    await Promise.all(inflight.map((f) => f.settled));
  } finally {
    ctx.setStep(undefined);
  }
  return { history, membership, members, callbackError };
}
