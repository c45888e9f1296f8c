import type { ClusterSpec } from "../config/cluster-spec";
import type { MeshtrainError } from "../errors/errors";
import type { WorkerHandle } from "../members/worker-handle";
import { addWorker, type LaunchHooks } from "./launch";
import { stopMembers } from "./stop-members";

/**
 * `.spares(n)`: local workers started with the cluster, joined to its session with their
 * backend up and their heartbeat running, idle until a fit loses a member (elastic data
 * parallelism; model, pipeline and hybrid fits that write checkpoints). Taking one costs no
 * process start and no backend start-up: only the state it is loaded with.
 */
export class Spares {
  private constructor(private idle: WorkerHandle[]) {}

  static none(): Spares {
    return new Spares([]);
  }

  /** Starts `spec.spares` workers, numbered after the members; none is left running if one fails. */
  static async start(
    spec: ClusterSpec,
    o: { session: string; token: string; firstRank: number; hooks: LaunchHooks; orStop: () => Promise<void> },
  ): Promise<Spares> {
    const started: WorkerHandle[] = [];
    const { orStop, firstRank, ...reach } = o;
    const results = await Promise.allSettled(
      Array.from({ length: spec.spares ?? 0 }, async (_, i) => {
        let h: WorkerHandle | undefined;
        const label = (): string => h?.label ?? `spare ${i}`;
        h = await addWorker(spec, { ...reach, rank: firstRank + i, url: undefined, joins: undefined, label });
        h.markSpare(i);
        started.push(h);
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      // The members stop too: the cluster was asked for with spares, and would be without them.
      await Promise.all([stopMembers(undefined, started, "a spare did not start"), orStop()]);
      throw failed.reason;
    }
    return new Spares(started);
  }

  /** The spares still idle and alive. */
  get handles(): readonly WorkerHandle[] {
    return this.idle;
  }

  has(h: WorkerHandle): boolean {
    return this.idle.includes(h);
  }

  /** The next idle spare, become worker `rank` (or parameter server `rank`); undefined when none is left. */
  take(rank: number, role: "worker" | "ps" = "worker"): WorkerHandle | undefined {
    const h = this.idle.find((s) => !s.lost);
    if (!h) return undefined;
    this.idle = this.idle.filter((s) => s !== h);
    h.renumber(rank, role);
    return h;
  }

  /**
   * An idle spare in `lost`'s place among `handles` (the workers, or the parameter servers), as the
   * same rank and role (strategies whose ranks are positions: stages, servers); null when none is idle.
   */
  substitute(lost: WorkerHandle, handles: WorkerHandle[]): WorkerHandle | null {
    const h = this.take(lost.rank, lost.role);
    if (h) handles[lost.rank] = h;
    return h ?? null;
  }

  /** A spare lost while idle leaves the pool; the members never knew it, so the cluster goes on. */
  drop(h: WorkerHandle, err: MeshtrainError): void {
    this.idle = this.idle.filter((s) => s !== h);
    h.fence();
    process.stderr.write(`meshtrain: ${err.summary}, while idle; ${this.idle.length} spare(s) left\n`);
  }
}
