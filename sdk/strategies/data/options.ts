import { z } from "zod";
import { refusedPair, type DataChoices } from "../../protocol/data-option-pairs";
import type { ClusterSpec } from "../../config/cluster-spec";
import { workerCount } from "../../config/cluster-spec";
import { ConfigError } from "../../errors/errors";
import { COMPRESSIONS } from "../../protocol/wire-formats";
import { OPTIMIZER_NAMES, OptimizerSpecSchema } from "../../protocol/optimizer-spec";

/** DiLoCo's outer optimizer (Douillard et al. 2023, section 3): Nesterov momentum 0.9 at rate 0.7. */
export const DILOCO_OUTER = { name: "momentum", learningRate: 0.7, momentum: 0.9, useNesterov: true } as const;

/** An optimizer by name (its defaults) or by name and settings, as fit's optimizer option. */
const OuterSchema = z.union([
  z.enum(OPTIMIZER_NAMES).transform((name) => OptimizerSpecSchema.parse({ name })),
  OptimizerSpecSchema,
]);

/** strategy("data", options): synchronous data parallelism. */
export const DataOptionsSchema = z.strictObject({
  /**
   * Who reads the data. "driver" (default, in-graph replication): the driver sends every step's
   * slices. "workers" (between-graph): each worker loads the dataset itself and reads its own
   * slices; the driver only says which step it is. Needs datasets.mnist or datasets.synthetic.
   */
  feed: z.enum(["driver", "workers"]).default("driver"),
  /**
   * Survive lost workers: the others go back to the last step every one of them completed,
   * re-form the ring without the lost one, share its slice of the batch, and carry on while at
   * least minWorkers remain. Workers added during the fit (cluster.add) join at a step boundary.
   */
  elastic: z
    .strictObject({
      minWorkers: z.number().int().min(1).max(4096),
      /** A lost worker is replaced: a new local worker started, or (join()) the next worker that joins. */
      replace: z.boolean().optional(),
      /**
       * Let go a worker whose compute takes more than `slowerThan` times the others' median for
       * `steps` recorded steps in a row (default 5), as if it were lost: worth it when the others
       * wait on it longer than a replacement takes to join.
       */
      evict: z
        .strictObject({
          slowerThan: z.number().min(1.2).max(1000),
          steps: z.number().int().min(1).max(100_000).default(5),
        })
        .optional(),
    })
    .optional(),
  /**
   * Gradients travel as 16-bit floats (half the bytes), the rounding error carried to the next
   * step (error feedback). "fp16": 10 bits of mantissa, values up to 65504; "bf16": 7 bits, the
   * range of float32. `{ name: "powersgd", rank }`: each gradient of two or more dimensions as a
   * rank-r product P Q^T (PowerSGD, as DDP's powerSGD_hook), with error feedback. Default: float32.
   */
  compression: z
    .union([
      z.enum(COMPRESSIONS),
      z.strictObject({ name: z.literal("powersgd"), rank: z.number().int().min(1).max(4096) }),
    ])
    .optional(),
  /**
   * All-reduce the gradient in buckets while the backward pass still computes earlier layers
   * (as DDP does; native data plane and native step only). "auto" (default): only where every
   * worker's machine has a core to spare for the all-reduce's thread, since on machines whose
   * cores all compute it takes its CPU from the backward pass (bench:scaling measures both).
   * With shard "gradients" or "parameters": each bucket's reduce-scatter runs while the backward
   * pass computes the next bucket, and ZeRO-3 gathers the next bucket while one computes (on
   * either data plane), each holding a second buffer of the largest bucket.
   */
  overlap: z.union([z.literal("auto"), z.boolean()]).default("auto"),
  /**
   * BatchNormalization's statistics: "replica" (default, as Keras' MirroredStrategy) normalizes
   * each slice by its own; "sync" by the whole global batch's, as one process at the global
   * batch does, for slices too small for statistics of their own. Sync takes each step in rounds
   * of small all-reduces (two per layer forward, one back) and computes by autodiff.
   */
  batchNorm: z.enum(["replica", "sync"]).default("replica"),
  /**
   * Talk less (local SGD; DiLoCo with its outer optimizer): each replica takes `every` steps on
   * its own slices with the model's optimizer, then the replicas all-reduce how far their
   * weights moved since the last sync and `outer` applies that mean change to the weights they
   * all started from. Also synced at every epoch's end. `outer` default: Nesterov momentum 0.9,
   * learning rate 0.7 (DiLoCo's); `{ name: "sgd", learningRate: 1 }` is plain local SGD (model
   * averaging), and with `every: 1` plain data parallelism under SGD.
   */
  sync: z
    .strictObject({
      every: z
        .number()
        .int()
        .min(1)
        .max(1 << 20),
      outer: OuterSchema.default(DILOCO_OUTER),
    })
    .optional(),
  /**
   * Sharded data parallelism (ZeRO, Rajbhandari et al. 2020). "optimizer" (stage 1): each
   * replica keeps the optimizer's state for its shard of the parameters only (1/N of it); the
   * gradient is reduce-scattered, each replica updates its shard, and the weights are
   * all-gathered: the all-reduce's bytes, in its two halves. "parameters" (stage 3, as FSDP's
   * FULL_SHARD): each replica keeps its part of every layer's weights, gradient and optimizer
   * state; a bucket of layers' weights is all-gathered before its forward and again before its
   * backward pass, and its gradient reduce-scattered after (1.5x the bytes; see bucketMB).
   * "gradients" (stage 2, as FSDP's SHARD_GRAD_OP): the whole weights stay on every replica;
   * each layer's gradient is reduce-scattered as the backward pass writes it, each replica
   * keeps its part of the gradient and optimizer state, and after the update every layer's
   * weights are all-gathered (the all-reduce's bytes). Stages 2 and 3 need the native step (the
   * native backend, and layers it computes).
   */
  shard: z.enum(["optimizer", "gradients", "parameters"]).optional(),
  /**
   * ZeRO-2 and -3: consecutive layers share their collectives, filled from the output back up to
   * this many MiB of weights (a larger layer alone; 0: each layer alone). Fewer, larger
   * collectives are faster; a bucket is held whole while its layers run (ZeRO-3: twice).
   * Default: 25 for "gradients" (as DDP's bucket_cap_mb), 12 for "parameters" (half, since it
   * holds a bucket twice); left out under a memory cap that fits only 0, the plan takes 0 and
   * says why.
   */
  bucketMB: z
    .number()
    .min(0)
    .max(1 << 20)
    .optional(),
});
export type DataOptions = z.output<typeof DataOptionsSchema>;

/** bucketMB groups the layers of ZeRO-2 and -3 only. */
function checkBuckets(o: DataOptions): void {
  if (o.bucketMB !== undefined && o.shard !== "gradients" && o.shard !== "parameters") {
    throw new ConfigError(
      `bucketMB ${o.bucketMB} groups the layers of shard "gradients" or "parameters" (ZeRO-2, -3) into collectives; ${o.shard ? `shard "${o.shard}" reduce-scatters the whole gradient at once` : "without shard it has nothing to group"}`,
      { hint: 'add shard: "gradients" or "parameters", or drop bucketMB' },
    );
  }
}

/** The options as the pairs refused read them (protocol/data-option-pairs.ts); a fit adds its own. */
export function dataChoices(o: DataOptions): DataChoices {
  const compression = typeof o.compression === "object" ? "powersgd" : (o.compression ?? "none");
  return {
    compression,
    shard: o.shard ?? "none",
    syncEvery: o.sync?.every ?? 0,
    batchNorm: o.batchNorm,
    elastic: o.elastic !== undefined,
    feed: o.feed,
  };
}

/** Elastic training against the cluster it starts with. */
export function checkDataOptions(o: DataOptions, spec: ClusterSpec): void {
  const n = workerCount(spec);
  checkBuckets(o);
  const refused = refusedPair(dataChoices(o));
  if (refused) throw new ConfigError(refused.message, { hint: refused.hint });
  if (o.elastic?.replace && spec.workers.kind === "remote") {
    throw new ConfigError(
      "elastic: replace starts a local worker, or takes the next that joins, but connect()'s workers run elsewhere",
      {
        hint: 'start a new worker yourself and add it with cluster.add("ws://host:port") from onStep, or launch with workers(n) or join()',
      },
    );
  }
  if (spec.spares !== undefined && !o.elastic) {
    throw new ConfigError(
      `spares(${spec.spares}) wait for a lost worker, but without elastic a lost worker fails the fit`,
      {
        hint: `add elastic: { minWorkers: ${Math.max(1, n - 1)} } to strategy("data", ...)`,
      },
    );
  }
  if (o.elastic && o.elastic.minWorkers > n) {
    throw new ConfigError(
      `elastic: minWorkers ${o.elastic.minWorkers} is more than the ${n} worker(s) the cluster starts with`,
      { hint: `use minWorkers between 1 and ${n}` },
    );
  }
}
