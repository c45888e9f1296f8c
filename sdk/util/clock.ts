/** Milliseconds since the Unix epoch, to sub-millisecond precision: comparable across processes. */
export function wallClock(): number {
  return performance.timeOrigin + performance.now();
}
