import { busiestCore, handlingMs, type CoreLoad, type Seat } from "./core-load";

/**
 * What one of the data ring's all-reduces costs a member's CPU (every thread of its process),
 * timed on the ring itself: a fixed part per all-reduce and a part per byte all-reduced.
 */
export interface RingCpu {
  fixedMs: number;
  msPerByte: number;
}

/**
 * The two terms from a member's CPU time for two all-reduces of different sizes, as the ring's
 * wall times give its bandwidth and latency; noise never makes a byte or an all-reduce cost
 * less than nothing.
 */
export function ringCpuOf(bytes: readonly [number, number], cpuMs: readonly [number, number]): RingCpu {
  const msPerByte = Math.max(0, (cpuMs[1] - cpuMs[0]) / (bytes[1] - bytes[0]));
  return { fixedMs: Math.max(0, cpuMs[0] - msPerByte * bytes[0]), msPerByte };
}

/** A data-parallel step's work per worker, and what the driver does for it. */
export interface DataStepWork {
  /** A worker's CPU time computing its slice (a shared step's wall time over its core's workers). */
  computeMs: number;
  /** Bytes all-reduced a step, in `allReduces` all-reduces. */
  bytes: number;
  allReduces: number;
  replicas: number;
  /** What the driver sends in all each step (the slices, when it feeds the data). */
  feedBytes: number;
}

/**
 * The CPU time of one data-parallel step on the busiest core: each worker's compute and its
 * all-reduces at what the ring probe cost its process (over the WebSocket plane the ring's
 * frames are read, copied, added and collected in JavaScript, on the core where that worker
 * computes; the thread that does it and the garbage collector's threads take CPU time that the
 * ring's wall time does not show), and the driver's messages at what its link probes cost it.
 * Undefined where a worker did not say (a tab cannot read its CPU time): nothing is priced from
 * a guess.
 */
export function dataCoreLoad(
  w: DataStepWork,
  ring: readonly RingCpu[] | undefined,
  seats: { workers: readonly Seat[]; driver?: Seat },
): CoreLoad | undefined {
  if (!ring || ring.length !== seats.workers.length) return undefined;
  const workers = seats.workers.map((seat, r) => ({
    ...seat,
    name: `worker ${r}`,
    busyMs: w.computeMs + w.allReduces * ring[r]!.fixedMs + w.bytes * ring[r]!.msPerByte,
  }));
  // The driver asks each worker for its step and takes its answer; one that did not measure itself is left out.
  const driver = seats.driver?.handling
    ? [{ ...seats.driver, name: "the driver", busyMs: handlingMs(seats.driver.handling, w.replicas, w.feedBytes) }]
    : [];
  return busiestCore([...workers, ...driver]);
}
