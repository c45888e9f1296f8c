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
