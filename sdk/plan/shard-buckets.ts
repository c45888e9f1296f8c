import type { ModelSummary } from "./model-summary";

/**
 * ZeRO-2's bucket by default, in MiB: PyTorch DDP's `bucket_cap_mb`. Each collective is a point
 * where the replicas wait for one another, so fewer and larger ones are faster: on the
 * eight-layer 11.0M MLP (5.5 MiB a layer), Adam, 2 workers over loopback, medians of 3 rounds
 * against plain data parallelism's 1720 samples/s, one layer a bucket ran 0.82x, two 0.88x, four
 * (22 MiB) 0.96x, all nine 1.04x. A bucket costs its size once, in the buffer its gradient is
 * written into.
 *
 * ZeRO-3 holds a bucket twice (its gathered weights and its gradient), so its default is half
 * ZeRO-2's: what its buckets hold at once is what ZeRO-2's one holds. On the same MLP and
 * workers (2026-11-27, medians of 5 interleaved rounds against data parallelism's 1742
 * samples/s), one layer a bucket ran 0.70x and peaked 111 MiB above the worker's own resident
 * set, two (this default) 0.77x and 123 MiB; four (25 MiB) ran 0.90x over 3 rounds but held 145
 * MiB, what ZeRO-2 holds there (data parallelism: 188). On 4 workers (3 rounds) one layer a
 * bucket ran 1231-1269 samples/s and peaked 81-87 MiB above, two 1371-1455 and 91-97 MiB,
 * against data parallelism's 1645 and 199. DeepSpeed's stage 3 gathers in buckets
 * too (`stage3_prefetch_bucket_size`). A layer larger than the cap is a bucket of its own, and
 * where a memory cap needs it (and bucketMB is not given) a plan takes one layer a bucket.
 */
export const DEFAULT_BUCKET_MB = { gradients: 25, parameters: 12 } as const;

/** Consecutive layers whose collectives run as one: the first and last (indices among the layers with trainable weights) and their weights' bytes. */
export interface ShardBucket {
  first: number;
  last: number;
  bytes: number;
}

/** The bucket cap in bytes a shard stage runs with: `bucketMB` where given, else the stage's default. */
export function bucketCapBytes(shard: "gradients" | "parameters", bucketMB?: number): number {
  return Math.round((bucketMB ?? DEFAULT_BUCKET_MB[shard]) * 1024 * 1024);
}

/**
 * Layers grouped into buckets, filled from the output back as the backward pass writes their
 * gradients (as DDP fills its buckets): a bucket takes the next layer while its bytes stay
 * within `capBytes`; a layer larger than the cap is a bucket of its own. So no bucket is larger
 * than the cap or the largest layer, whichever is more. Returned in layer order.
 */
export function shardBuckets(layerBytes: readonly number[], capBytes: number): ShardBucket[] {
  const out: ShardBucket[] = [];
  for (let i = layerBytes.length - 1; i >= 0; i--) {
    const bytes = layerBytes[i]!;
    const open = out[out.length - 1];
    if (open && open.bytes + bytes <= capBytes) {
      open.first = i;
      open.bytes += bytes;
    } else out.push({ first: i, last: i, bytes });
  }
  return out.reverse();
}

/** The bytes of each layer that has trainable weights, in layer order: what a ZeRO-2/3 replica shards. */
export function trainableLayerBytes(model: Pick<ModelSummary, "layers">): number[] {
  return model.layers.map((l) => l.trainableParams * 4).filter((b) => b > 0);
}

/** The largest bucket's bytes: what ZeRO-2 and -3 hold whole at a time (ZeRO-3 twice). */
export function largestBucketBytes(model: Pick<ModelSummary, "layers">, capBytes: number): number {
  return Math.max(0, ...shardBuckets(trainableLayerBytes(model), capBytes).map((b) => b.bytes));
}
