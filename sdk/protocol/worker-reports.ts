import { z } from "zod";
import { PROTOCOL_VERSION } from "./version";

/** Messages a worker sends its driver unasked: remarks, what it printed, what it is doing. */

const v = z.literal(PROTOCOL_VERSION);

/** Worker -> driver remarks worth showing the user (once), e.g. a backend fallback. */
export const NoticeSchema = z.strictObject({
  type: z.literal("notice"),
  v,
  level: z.enum(["info", "warn"]),
  text: z.string().max(4096),
});

/**
 * Worker -> driver: lines a worker started elsewhere wrote to its stdout or stderr (local
 * workers' output reaches the driver through their pipes instead). `dropped`: lines the worker
 * held back since its last batch because it wrote faster than it may send.
 */
export const OutputSchema = z.strictObject({
  type: z.literal("output"),
  v,
  stream: z.enum(["stdout", "stderr"]),
  lines: z.array(z.string().max(8192)).max(1000),
  dropped: z.number().int().nonnegative().optional(),
});

/**
 * Worker -> driver, at most twice per heartbeat interval and only when it changed: what the
 * worker is doing, for how long, and (waiting) what it waits for. Stall reports are made of these.
 */
export const ProgressSchema = z.strictObject({
  type: z.literal("progress"),
  v,
  action: z.string().max(512),
  /**
   * busy: computing; waiting: on other processes (an all-reduce, a neighbouring stage, a
   * server); idle: done with what it was sent; failed: its last step failed.
   */
  state: z.enum(["busy", "waiting", "idle", "failed"]),
  /** Who it waits for, when the worker knows, e.g. "a chunk from rank 1 (127.0.0.1:40111)". */
  detail: z.string().max(512).optional(),
  /** How long the action has run, when this was sent. */
  forMs: z.number().finite().nonnegative(),
});
