import { z } from "zod";
import { ConfigError } from "../../errors/errors";
import { COMPRESSIONS } from "../../protocol/wire-formats";
import { workerCount, type ClusterSpec } from "../../config/cluster-spec";

/**
 * strategy("ps", options): parameter servers (`.ps(n)`) hold the trainable parameters, sharded by
 * bytes; workers pull them, compute gradients on their slices and push them to the servers,
 * which apply the optimizer.
 */
export const PsOptionsSchema = z.strictObject({
  /**
   * "async" (default): each push is applied on arrival and workers never wait for each other.
   * "sync": the servers sum one push per worker per step and apply it once (equals one process
   * training on the global batch).
   */
  mode: z.enum(["async", "sync"]).default("async"),
  /**
   * Async only (stale-synchronous parallel): a worker starts a step only while it is at most
   * this many steps ahead of the slowest worker still training. Default: unbounded.
   */
  staleness: z.number().int().min(0).max(1_000_000).optional(),
  /** Pushes carry 16-bit gradients with error feedback, as strategy("data", { compression }). */
  compression: z.enum(COMPRESSIONS).optional(),
  /**
   * Sync only: a lost worker does not end the fit while at least minWorkers remain. The others
   * compute its slice of the step it was lost in (on the same parameters, pushed as its own),
   * and the steps after are split among them. Async servers go on without a lost worker anyway.
   */
  elastic: z.strictObject({ minWorkers: z.number().int().min(1).max(4096) }).optional(),
});
export type PsOptions = z.output<typeof PsOptionsSchema>;

export function checkPsOptions(o: PsOptions, spec: ClusterSpec): void {
  if (o.elastic && o.mode !== "sync")
    throw new ConfigError(
      'strategy("ps", { elastic }) is for mode "sync"; async parameter servers already go on without a lost worker, its unapplied slices handed to the others',
      { hint: 'drop elastic, or use mode: "sync"' },
    );
  if (spec.spares !== undefined && o.mode !== "sync")
    throw new ConfigError(
      `spares(${spec.spares}) take a lost server's place from the fit's last checkpoint, and async parameter servers write none (a lost worker's slices go to the others anyway)`,
      { hint: 'use mode: "sync" with fit({ checkpoint }), or drop .spares()' },
    );
  if (o.elastic && o.elastic.minWorkers > workerCount(spec))
    throw new ConfigError(
      `elastic: minWorkers ${o.elastic.minWorkers} is more than the ${workerCount(spec)} worker(s) the cluster starts with`,
      { hint: `use minWorkers between 1 and ${workerCount(spec)}` },
    );
  if (o.mode === "sync" && o.staleness !== undefined) {
    throw new ConfigError(
      `strategy("ps", { mode: "sync", staleness: ${o.staleness} }): a staleness bound is for mode "async"; sync workers are never ahead of each other`,
      { hint: 'use mode "async" with staleness k (stale-synchronous parallel), or drop staleness' },
    );
  }
}
