import { mixSeed, permutation } from "../data/random";

/**
 * Which samples each step and each replica sees. With shuffle off, step i's global batch is
 * samples [i*B, (i+1)*B) and replica r takes the r-th equal slice, as model.fit would; with
 * shuffle on, a seeded permutation per epoch.
 */

/** The sample order of one epoch: null means the identity order. */
export function epochOrder(size: number, shuffle: boolean, seed: number, epoch: number): Uint32Array | null {
  return shuffle ? permutation(size, mixSeed(seed, epoch)) : null;
}

export function stepsPerEpoch(size: number, batchSize: number): number {
  return Math.ceil(size / batchSize);
}

/** [start, end) of step i's global batch within the epoch order. */
export function globalBatch(size: number, batchSize: number, i: number): [number, number] {
  return [i * batchSize, Math.min(size, (i + 1) * batchSize)];
}

/**
 * Splits `count` samples among `replicas` as evenly as it goes: the first `count % replicas`
 * replicas take one more. Gradients are weighted by slice size, so an uneven last batch still
 * gives the full-batch gradient.
 */
export function replicaSlices(count: number, replicas: number): number[] {
  const base = Math.floor(count / replicas);
  const extra = count % replicas;
  return Array.from({ length: replicas }, (_, r) => base + (r < extra ? 1 : 0));
}

/**
 * How one global batch of `size` samples is split: each replica's slice and, where a pipeline
 * cuts slices into micro-batches, each slice's micro-batches. Plans hold the splits a fit meets
 * (its full batch, and an epoch's shorter last one); runtimes execute them.
 */
export interface BatchSplit {
  readonly size: number;
  readonly perReplica: readonly number[];
  /** micro[r]: replica r's micro-batch sizes (null: no micro-batches). */
  readonly micro: ReadonlyArray<readonly number[]> | null;
}

export function splitBatch(size: number, replicas: number, microBatches?: number): BatchSplit {
  const perReplica = Object.freeze(replicaSlices(size, replicas));
  const micro =
    microBatches === undefined
      ? null
      : Object.freeze(perReplica.map((n) => Object.freeze(replicaSlices(n, microBatches))));
  return Object.freeze({ size, perReplica, micro });
}

/**
 * The splits a plan made for batchSize: the full batch, and the last batch of an epoch when
 * the dataset's size (known at fit time) leaves a shorter one.
 */
export function planSplits(
  batchSize: number,
  datasetSize: number | undefined,
  replicas: number,
  microBatches?: number,
): readonly BatchSplit[] {
  const last = datasetSize === undefined ? 0 : datasetSize % batchSize;
  const sizes = last > 0 && datasetSize! > batchSize ? [batchSize, last] : last > 0 ? [last] : [batchSize];
  return Object.freeze(sizes.map((n) => splitBatch(n, replicas, microBatches)));
}

/** The plan's split of a batch of `count` samples; a batch the plan did not split is a bug, said as one. */
export function splitOf(batch: { readonly splits: readonly BatchSplit[] } | null, count: number): BatchSplit {
  const found = batch?.splits.find((s) => s.size === count);
  if (!found) {
    throw new Error(
      `the plan has no split of a batch of ${count} samples (it split ${batch ? batch.splits.map((s) => s.size).join(" and ") : "no batch"}): plans made for a fit know the dataset's size`,
    );
  }
  return found;
}

/** Each replica's rows [start, end) of a step's batch (rows `start` to `end` of the epoch's order) and its share, by the plan's split. */
export function replicaRanges(
  batch: { readonly splits: readonly BatchSplit[] } | null,
  start: number,
  end: number,
): Array<{ start: number; end: number; share: number }> {
  const count = end - start;
  let from = start;
  return splitOf(batch, count).perReplica.map((n) => {
    const range = { start: from, end: from + n, share: n / count };
    from += n;
    return range;
  });
}
