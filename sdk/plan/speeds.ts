import { machinesOf } from "./machines";
import type { RingSpeed, Speeds } from "./predict";

/** What the workers measured when they joined (a launched cluster knows it; a builder does not). */
export interface MeasuredDevice {
  gflops?: number;
  kernelOverheadUs?: number;
  linkBytesPerSecond?: number;
  linkLatencyMs?: number;
  host?: string;
  cpus?: number;
  cores?: readonly number[];
  /** A worker on a GPU: its measured host-device transfer rate, bytes/s. */
  deviceBytesPerSecond?: number;
}

/**
 * The speeds a prediction rests on: the slowest worker's matrix speed, the largest per-kernel
 * cost and the slowest link, since a synchronous step waits for the slowest of each, and the
 * data ring's own speed where it was measured on as many members as there are devices. Undefined
 * when any of them was not measured: no prediction is better than an invented one.
 */
export function speedsOf(devices: readonly MeasuredDevice[] | undefined, ring?: RingSpeed): Speeds | undefined {
  if (!devices || devices.length === 0) return undefined;
  const gflops = Math.min(...devices.map((d) => d.gflops ?? 0));
  const link = Math.min(...devices.map((d) => d.linkBytesPerSecond ?? 0));
  const kernelUs = Math.max(...devices.map((d) => d.kernelOverheadUs ?? -1));
  const latencyMs = Math.max(...devices.map((d) => d.linkLatencyMs ?? -1));
  if (!(gflops > 0) || !(link > 0) || kernelUs < 0 || latencyMs < 0) return undefined;
  const device = devices.map((d) => d.deviceBytesPerSecond).filter((v): v is number => v !== undefined && v > 0);
  return {
    flopsPerSecond: gflops * 1e9,
    kernelSeconds: kernelUs / 1e6,
    linkBytesPerSecond: link,
    latencySeconds: latencyMs / 1e3,
    coreSharing: coreSharing(devices),
    ...(ring && ring.members === devices.length ? { ring } : {}),
    ...(device.length > 0 ? { deviceBytesPerSecond: Math.min(...device) } : {}),
  };
}

/**
 * How many workers share each core on the most crowded machine (at least 1): workers computing
 * at once on fewer cores than themselves each take that much longer. Workers that did not say
 * their machine count as machines of their own.
 */
function coreSharing(devices: readonly MeasuredDevice[]): number {
  return Math.max(1, ...machinesOf(devices).map((m) => m.workers / m.cpus));
}
