/**
 * The stale-synchronous-parallel rule, as pure functions: a worker's clock is the number of
 * steps it has finished (pushed and had acknowledged). A worker may start its next step only
 * while that step is at most `bound` steps ahead of the slowest worker still training.
 */

/** How far ahead of the slowest live worker a step with this clock would run. */
export function leadOf(nextClock: number, finished: ReadonlyArray<number | null>): number {
  let slowest = Infinity;
  for (const f of finished) if (f !== null && f < slowest) slowest = f;
  return slowest === Infinity ? 0 : nextClock - slowest;
}

/** Whether a worker whose next step has clock `nextClock` may start it now (null bound: always). */
export function mayStart(nextClock: number, finished: ReadonlyArray<number | null>, bound: number | null): boolean {
  return bound === null || leadOf(nextClock, finished) <= bound;
}
