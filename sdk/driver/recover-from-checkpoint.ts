import * as fs from "node:fs";
import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../data/dataset";
import { echoesLoss, memberLoss } from "./await";
import { readCheckpoint } from "./checkpoint/store";
import type { FitContext } from "./fit-context";
import type { ResolvedFitOptions } from "./fit-options";
import { FitAborted } from "./fit-stop";
import { onceEach } from "./replayed-callbacks";
import { stepsPerEpoch } from "../plan/batches";
import { ConfigError, type MeshtrainError } from "../errors/errors";
import type { WorkerHandle } from "../members/worker-handle";
import type { MembershipChange, RunRecord, StepRecord } from "../metrics/records";

/** A strategy's fit, run again from a checkpoint after a loss. */
export type RecoverableFit = (
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
) => Promise<RunRecord>;

/** Whose loss a spare repairs: the members whose places are positions (stages, servers), and what a spare takes. */
export interface Recovery {
  members(): WorkerHandle[];
  /** Lost parameter servers too (not only workers). */
  servers: boolean;
  /** What a spare takes the place of, for the refusal without a checkpoint ("a lost stage's place"). */
  takes: string;
}

/**
 * A fit on a cluster with spares (`.spares(n)`) whose members hold positions (a stage, a server's
 * shard): a lost member's place is taken by a spare as the same rank, every member is loaded
 * again from this fit's last checkpoint (from the start when it has written none yet), and the
 * steps since run again. A synchronous fit's result does not depend on who computes a position,
 * so it still equals model.fit; onStep and callbacks see each step once, and the records of steps
 * run again replace the first ones. Without a spare left, the loss ends the fit as before; on a
 * cluster without spares the fit runs once, as it would without this.
 */
export async function fitRecovering(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  fit: RecoverableFit,
  r: Recovery,
): Promise<RunRecord> {
  if (!ctx.spec.spares) return fit(ctx, model, dataset, o);
  const checkpoint = checkpointOf(ctx, o, r.takes);
  // The cluster no longer fails on a loss: this fit recovers from it, or ends with it. A failed
  // request's wait for the loss it echoes ends with a member's loss, not only the cluster's.
  const survive: FitContext["survive"] = (handler) => ctx.survive(handler, { servers: r.servers });
  survive(() => undefined);
  const recovering: FitContext = { ...ctx, survive, lossWithin: (ms) => memberLoss(ctx, r.members(), ms) };
  const started = { perf: performance.now(), wall: Date.now() };
  const records = new Map<number, StepRecord>();
  const history = (): StepRecord[] => [...records.values()].sort((a, b) => a.step - b.step);
  const membership: MembershipChange[] = [];
  let shown = -1;
  const watched: ResolvedFitOptions = {
    ...o,
    onStep: (rec) => {
      records.set(rec.step, rec);
      if (rec.step > shown) ((shown = rec.step), o.onStep?.(rec));
    },
    ...(o.callbacks ? { callbacks: onceEach(o.callbacks, stepsPerEpoch(dataset.size, o.batchSize), history) } : {}),
  };
  let attempt = watched;
  for (;;) {
    try {
      const run = await fit(recovering, model, dataset, attempt);
      const changes = [...(run.membership ?? []), ...membership].sort((a, b) => a.atMs - b.atMs);
      return { ...run, history: history(), ...(changes.length > 0 ? { membership: changes } : {}) };
    } catch (err) {
      if (!(await echoesLoss(ctx, r.members(), err))) throw err;
      const from = ownCheckpoint(checkpoint.dir, started.wall);
      const changes = substituteLost(ctx, r.members(), {
        atMs: performance.now() - started.perf,
        step: from?.step ?? 0,
      });
      const workers = ctx.workers.filter((h) => !h.lost).length;
      membership.push(...changes.map((c) => ({ ...c, workers })));
      for (const step of [...records.keys()]) if (step >= (from?.step ?? 0)) records.delete(step);
      attempt = { ...watched, ...(from ? { resumeFrom: from.path } : {}) };
    }
  }
}

/** The fit's checkpoint, which a lost member is recovered from: refused without one. */
function checkpointOf(
  ctx: FitContext,
  o: ResolvedFitOptions,
  takes: string,
): NonNullable<ResolvedFitOptions["checkpoint"]> {
  if (o.checkpoint) return o.checkpoint;
  throw new FitAborted(
    new ConfigError(
      `spares(${ctx.spec.spares}) take ${takes} from the fit's last checkpoint, and this fit writes none`,
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
  at: { atMs: number; step: number },
): Array<Omit<MembershipChange, "workers">> {
  return members
    .filter((h) => h.lost)
    .flatMap((lost) => {
      const spare = ctx.substitute(lost);
      if (!spare) throw lost.lost as MeshtrainError;
      const server = lost.role === "ps" ? { server: true as const } : {};
      return [
        {
          change: "left" as const,
          rank: lost.rank,
          address: lost.address,
          cause: lost.lost!.summary,
          ...server,
          ...at,
        },
        { change: "joined" as const, rank: spare.rank, address: spare.address, ...server, ...at },
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
