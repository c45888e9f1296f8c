/**
 * This process's CPU time so far, every thread's, user and system, ms: what its work cost the
 * machine's cores, which is not how long it took. Linux counts it to the nanosecond, so a short
 * interval's difference is exact.
 */
export function processCpuMs(): number | undefined {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
