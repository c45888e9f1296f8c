import { z } from "zod";
import { parseOrThrow } from "../config/zod-problem";
import { currentCell } from "./cell-origin";
import type { LaunchOrigin } from "./live-clusters";

/** What launch() takes: how this cluster lives beside others in a notebook. */
export interface LaunchOptions {
  /**
   * In a notebook, re-running the cell that launched a cluster closes that cluster first (and
   * says so); `keep: true` keeps this one when its cell runs again. Scripts never replace.
   */
  keep?: boolean;
  /** A name for this cluster (`cluster.name`): a named cluster is never replaced by a re-run, and no two live clusters share a name. */
  name?: string;
}

const LaunchOptionsSchema = z.strictObject({
  keep: z.boolean().optional(),
  name: z.string().min(1).max(100).optional(),
});

/** Where a launch comes from: the running notebook cell, unless the cluster is kept or named. */
export function launchOrigin(options: LaunchOptions): LaunchOrigin {
  const o = parseOrThrow(LaunchOptionsSchema, options, "launch() options");
  const cell = o.keep ? undefined : currentCell();
  return { ...(cell !== undefined ? { cell } : {}), ...(o.name !== undefined ? { name: o.name } : {}) };
}
