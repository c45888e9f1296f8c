import type { WorkerHandle } from "../../members/worker-handle";
import { WorkerLostError, type MeshtrainError } from "../../errors/errors";
import type { Departure, MembershipChange } from "../../metrics/records";
import type { FitContext, StepDone } from "../../driver/fit-context";
import { echoesLoss } from "../../driver/await";

/** One worker's part of a sync step: the rank whose slice it is (its own, or a lost one's), its rows and share. */
export interface SyncPart {
  rank: number;
  start: number;
  end: number;
  share: number;
}

/** A part answered: by whom (a stand-in answers for a lost rank). */
export interface SyncAnswer {
  part: SyncPart;
  worker: WorkerHandle;
  reply: StepDone;
}

/** Sends a part of the step to a worker; `standIn`: computed on its own part's parameters, pushed as `part.rank`'s. */
export type SendPart = (worker: WorkerHandle, part: SyncPart, standIn: boolean) => Promise<StepDone>;

/**
 * Elastic sync parameter servers. A worker lost in a step leaves its slice unpushed to some
 * servers (or all), which hold the step until it comes: another worker computes that slice on
 * the parameters it pulled for its own part of the same step (they still sit in its model) and
 * pushes it as the lost rank's. A server that has the lost rank's push already acknowledges it
 * and adds nothing, so the step applied is the one an uninterrupted fit applies, summed in the
 * same order. Then, between steps, the servers regroup onto the ranks left and every later step
 * is split among them. One step in flight at a time: a step sent ahead to a worker would queue
 * in front of the stand-in its own pull waits for. With a spare idle (`.spares(n)`), the regroup
 * takes it in the lost rank's place first (`enlist`): a worker here holds no state of its own, so
 * it joins with the model alone and pulls the parameters at its first step.
 */
export class SyncElastic {
  private members: WorkerHandle[];
  /** The ranks the servers sum, as last told. */
  private grouped: number[];
  readonly departures: Departure[] = [];
  /** Who left and who took a place, as elastic data parallelism records them. */
  readonly membership: MembershipChange[] = [];
  /** Members lost since the servers last regrouped: a spare may take their places. */
  private unreplaced: WorkerHandle[] = [];

  constructor(
    private readonly ctx: FitContext,
    private readonly minWorkers: number,
    private readonly fitStart: number,
    /** A spare loaded and linked in a lost worker's place (its rank), or null when none is idle. */
    private readonly enlist: ((lost: WorkerHandle) => Promise<WorkerHandle | null>) | null = null,
  ) {
    this.members = [...ctx.workers];
    this.grouped = this.members.map((h) => h.rank);
    // A lost worker is fenced by the cluster and seen here at the next step or in the one it fails.
    ctx.survive(() => undefined);
  }

  /** The workers still training, in rank order. */
  get live(): readonly WorkerHandle[] {
    return this.members.filter((h) => !h.lost);
  }

  /** One step: each live worker its part; a part lost with its worker computed by another; the servers regrouped after a loss. */
  async run(step: number, parts: (members: number) => SyncPart[], send: SendPart): Promise<SyncAnswer[]> {
    await this.regroup(step);
    const members = this.members;
    const own = parts(members.length).map((p, i) => ({ ...p, rank: members[i]!.rank }));
    const answers: SyncAnswer[] = [];
    const recomputed = new Set<number>();
    let missing = await this.settle(
      own.map((part, i) => ({ part, worker: members[i]! })),
      send,
      false,
      answers,
    );
    // Each missing part to a worker whose own part of this step was answered (it holds the step's parameters).
    for (let round = 0; missing.length > 0; round++) {
      const able = answers.filter((a) => a.part.rank === a.worker.rank && !a.worker.lost).map((a) => a.worker);
      for (const p of missing) recomputed.add(p.rank);
      this.noteLosses(step, recomputed);
      if (able.length < this.minWorkers || able.length === 0 || round > members.length) throw this.tooFew();
      missing = await this.settle(
        missing.map((part, i) => ({ part, worker: able[i % able.length]! })),
        send,
        true,
        answers,
      );
    }
    this.noteLosses(step, recomputed);
    await this.regroup(step + 1);
    return answers.sort((a, b) => a.part.rank - b.part.rank);
  }

  /** Sends each part; the parts whose worker was lost meanwhile come back to be sent again. */
  private async settle(
    sends: Array<{ part: SyncPart; worker: WorkerHandle }>,
    send: SendPart,
    standIn: boolean,
    answers: SyncAnswer[],
  ): Promise<SyncPart[]> {
    const settled = await Promise.allSettled(sends.map((s) => send(s.worker, s.part, standIn)));
    const missing: SyncPart[] = [];
    for (const [i, r] of settled.entries()) {
      const { part, worker } = sends[i]!;
      if (r.status === "fulfilled") answers.push({ part, worker, reply: r.value });
      else if (await echoesLoss(this.ctx, [worker], r.reason)) missing.push(part);
      else throw (await this.ctx.lossWithin(0)) ?? (r.reason as MeshtrainError);
    }
    return missing;
  }

  /** Between steps: the members lost are dropped and the servers told which ranks make a step from now on. */
  private async regroup(step: number): Promise<void> {
    this.noteLosses(step);
    for (const lost of this.unreplaced.splice(0)) {
      const spare = (await this.enlist?.(lost)) ?? null;
      if (!spare) continue;
      this.members = [...this.members, spare].sort((a, b) => a.rank - b.rank);
      this.changed("joined", spare, step);
    }
    if (this.members.length < this.minWorkers) throw this.tooFew();
    const ranks = this.members.map((h) => h.rank);
    if (ranks.join() === this.grouped.join()) return;
    await Promise.all(
      this.ctx.servers.map((sv) =>
        this.ctx.guard(
          sv.channel.request({ type: "regroup", members: ranks }, "regrouped", {
            timeoutMs: this.ctx.spec.timeouts.stepMs,
            waitingFor: `the servers to regroup onto worker rank(s) ${ranks.join(", ")}`,
          }),
        ),
      ),
    );
    this.grouped = ranks;
  }

  /** Members found lost leave, each recorded once, at the step it left in (requeued: its part of it computed by another). */
  private noteLosses(step: number, recomputed: ReadonlySet<number> = new Set()): void {
    for (const h of this.members.filter((m) => m.lost)) {
      this.departures.push({
        rank: h.rank,
        address: h.address,
        atMs: performance.now() - this.fitStart,
        step,
        cause: h.lost!.summary,
        requeued: recomputed.has(h.rank) ? 1 : 0,
        alreadyApplied: 0,
        partial: 0,
      });
      this.unreplaced.push(h);
      this.members = this.members.filter((m) => m !== h);
      this.changed("left", h, step);
    }
  }

  private changed(change: "left" | "joined", h: WorkerHandle, step: number): void {
    const cause = change === "left" ? { cause: h.lost!.summary } : {};
    const at = { atMs: performance.now() - this.fitStart, step, workers: this.members.length };
    this.membership.push({ change, rank: h.rank, address: h.address, ...cause, ...at });
  }

  private tooFew(): WorkerLostError {
    const first = this.departures[0];
    return new WorkerLostError(
      `${first?.cause ?? "workers were lost"}; ${this.live.length} worker(s) remain, fewer than elastic minWorkers ${this.minWorkers}`,
      { hint: "lower minWorkers, or launch more workers" },
    );
  }
}
