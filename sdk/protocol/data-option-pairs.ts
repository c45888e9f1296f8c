import type { CommHookSpec } from "./comm-hook-spec";
import type { GradientSumSpec } from "./gradient-sum-spec";

/**
 * The data-parallel choices that may refuse one another, by the names users give them. A field
 * left undefined is not known where the check runs (the builder knows no fit's checkpoint, a
 * worker no feed), and no pair with it is refused there.
 */
export interface DataChoices {
  readonly compression?: "fp16" | "bf16" | "powersgd" | "none";
  readonly shard?: "optimizer" | "gradients" | "parameters" | "none";
  /** Local SGD's steps between syncs (0: every step, plain data parallelism). */
  readonly syncEvery?: number;
  readonly batchNorm?: "replica" | "sync";
  readonly elastic?: boolean;
  readonly feed?: "driver" | "workers";
  readonly checkpoint?: boolean;
  readonly accumulate?: number;
}

/** A pair that cannot work together: why, and what to do. */
export interface PairRefusal {
  readonly message: string;
  readonly hint: string;
}

type Known = Required<DataChoices>;
interface Rule {
  /** The fields it reads: all must be known. */
  readonly reads: ReadonlyArray<keyof DataChoices>;
  readonly refuses: (c: Known) => boolean;
  readonly say: (c: Known) => PairRefusal;
}

const sharded = (c: Known): boolean => c.shard !== "none";
const local = (c: Known): boolean => c.syncEvery > 0;

/** Every pair refused, each with its reason: the one list the builder, the fit and a worker's load check. */
const RULES: readonly Rule[] = [
  {
    reads: ["syncEvery", "batchNorm"],
    refuses: (c) => local(c) && c.batchNorm === "sync",
    say: () => ({
      message:
        'batchNorm "sync" all-reduces statistics within every step, which a fit synced every few steps is there to avoid',
      hint: 'drop one of sync and batchNorm: "sync"',
    }),
  },
  {
    reads: ["shard", "syncEvery"],
    refuses: (c) => sharded(c) && local(c),
    say: (c) => ({
      message: `shard "${c.shard}" with sync: local SGD keeps each replica's own inner optimizer state for the whole model, which is what sharding divides`,
      hint: "drop sync, or drop shard",
    }),
  },
  {
    reads: ["shard", "compression"],
    refuses: (c) => sharded(c) && c.compression === "powersgd",
    say: (c) => ({
      message: `shard "${c.shard}" with compression powersgd: PowerSGD all-reduces low-rank factors, not a gradient that can be reduce-scattered`,
      hint: "drop compression powersgd, or drop shard",
    }),
  },
  {
    reads: ["shard", "batchNorm"],
    refuses: (c) => (c.shard === "gradients" || c.shard === "parameters") && c.batchNorm === "sync",
    say: (c) => ({
      message: `shard "${c.shard}" with batchNorm "sync": it takes each step by autodiff, and ZeRO-2 and ZeRO-3 work layer by layer inside the native step`,
      hint: 'drop batchNorm "sync", or drop shard',
    }),
  },
  {
    reads: ["elastic", "feed"],
    refuses: (c) => c.elastic && c.feed === "workers",
    say: () => ({
      message: 'elastic training re-shards each step\'s batch from the driver; it needs feed "driver"',
      hint: 'drop feed: "workers"',
    }),
  },
  {
    reads: ["elastic", "compression"],
    refuses: (c) => c.elastic && c.compression === "powersgd",
    say: () => ({
      message:
        "PowerSGD keeps each replica's error and the shared Q between steps; an elastic fit steps replicas back, which that state does not follow",
      hint: 'use compression "fp16" or "bf16" with elastic, or drop elastic',
    }),
  },
  {
    reads: ["elastic", "batchNorm"],
    refuses: (c) => c.elastic && c.batchNorm === "sync",
    say: () => ({
      message:
        'batchNorm "sync" all-reduces statistics in rounds within each step; an elastic fit re-forms its ring between steps only',
      hint: 'drop batchNorm: "sync", or drop elastic',
    }),
  },
  {
    reads: ["elastic", "checkpoint", "shard"],
    refuses: (c) => c.elastic && c.checkpoint && !sharded(c),
    say: () => ({
      message:
        "elastic training and checkpoints do not go together yet: a checkpoint is written from one replica at a fixed membership",
      hint: "drop checkpoint, or drop elastic",
    }),
  },
  {
    reads: ["elastic", "checkpoint", "shard"],
    refuses: (c) => c.elastic && !c.checkpoint && sharded(c),
    say: (c) => ({
      message: `elastic training with shard "${c.shard}" needs checkpoints: a lost worker takes its part of the optimizer state with it, so the others go back to the last checkpoint, re-sharded over them`,
      hint: "give the fit checkpoint: { dir, every } (every: how many steps a loss may cost)",
    }),
  },
  {
    reads: ["syncEvery", "checkpoint"],
    refuses: (c) => local(c) && c.checkpoint,
    say: (c) => ({
      message: `checkpoints and sync every ${c.syncEvery} steps do not go together yet: between syncs each replica holds weights and optimizer state of its own, which a checkpoint of one replica does not keep`,
      hint: "drop checkpoint, or drop sync",
    }),
  },
  {
    reads: ["batchNorm", "accumulate"],
    refuses: (c) => c.batchNorm === "sync" && c.accumulate > 1,
    say: (c) => ({
      message: `accumulate ${c.accumulate} with batchNorm "sync": the global batch's statistics are those of the whole update's batch, which accumulation computes a chunk at a time`,
      hint: 'raise batchSize instead, or use batchNorm "replica"',
    }),
  },
];

/** The first pair among `c`'s known choices that cannot work together, or undefined. */
export function refusedPair(c: DataChoices): PairRefusal | undefined {
  const rule = RULES.find((r) => r.reads.every((f) => c[f] !== undefined) && r.refuses(c as Known));
  return rule?.say(c as Known);
}

/** What a replica's load says of the choices (a worker knows no feed or checkpoint). */
export function choicesOfLoad(load: {
  hook?: CommHookSpec | undefined;
  sum?: GradientSumSpec | undefined;
  batchNorm?: "sync" | undefined;
  elastic?: boolean | undefined;
  accumulate?: number | undefined;
}): DataChoices {
  const kind = load.sum?.kind;
  const shard =
    kind === "zero-1" ? "optimizer" : kind === "zero-2" ? "gradients" : kind === "zero-3" ? "parameters" : "none";
  return {
    compression: load.hook?.kind ?? "none",
    shard,
    // A worker is not told how often it syncs: a local sum stands for "some".
    syncEvery: kind === "local" ? 1 : 0,
    batchNorm: load.batchNorm ?? "replica",
    elastic: load.elastic ?? false,
    accumulate: load.accumulate ?? 1,
  };
}
