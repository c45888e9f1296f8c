/** Splits `length` elements into `parts` contiguous segments whose sizes differ by at most one. */
export function segmentBounds(length: number, parts: number, index: number): [start: number, end: number] {
  const base = Math.floor(length / parts);
  const extra = length % parts;
  const start = index * base + Math.min(index, extra);
  return [start, start + base + (index < extra ? 1 : 0)];
}

/** Chunk offsets inside [start, end), each chunk at most `chunk` elements. */
export function chunkOffsets(start: number, end: number, chunk: number): number[] {
  const out: number[] = [];
  for (let o = start; o < end; o += chunk) out.push(o);
  return out;
}

export function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

/**
 * Which part of the ring all-reduce runs: both phases, or one alone (sharded data parallelism).
 * After "reduceScatter" position p holds the sum of its shard, segment (p+1) mod N (the rest of
 * the buffer is left partly summed); "allGather" sends each position's shard as it stands to
 * every other.
 */
export type RingPhases = "both" | "reduceScatter" | "allGather";

/** The segment a ring position holds summed after a reduce-scatter, and sends in an all-gather. */
export function shardBounds(length: number, size: number, position: number): [start: number, end: number] {
  return segmentBounds(length, size, mod(position + 1, size));
}
