import type { WorkerHandle } from "../members/worker-handle";
import type { PlanDevice } from "../plan/plans";
import type { Seat } from "../plan/core-load";
import { driverSeat } from "../members/driver-seat";

/** A worker's device as plans see it: what it reported when it joined, and the driver's link to it. */
export function devicesOf(w: WorkerHandle): PlanDevice {
  return {
    backend: w.info?.backend ?? "?",
    device: w.info?.device ?? "?",
    memoryBytes: w.info?.memoryBytes ?? 0,
    gflops: w.info?.gflops ?? 0,
    kernelOverheadUs: w.info?.kernelOverheadUs ?? 0,
    linkBytesPerSecond: w.linkBytesPerSecond,
    linkLatencyMs: w.linkLatencyMs,
    ...(w.handling ? { handling: { ...w.handling } } : {}),
    ...(w.info ? { host: w.info.hostname, cpus: w.info.cpus, ...(w.info.cores ? { cores: w.info.cores } : {}) } : {}),
    ...(w.info?.node === "browser" ? { tab: true } : {}),
    ...(w.info?.gpu ? { gpu: { name: w.info.gpu.name, software: w.info.gpu.software } } : {}),
    ...(w.info?.gpu?.transferBytesPerSecond ? { deviceBytesPerSecond: w.info.gpu.transferBytesPerSecond } : {}),
  };
}

/** The driver's seat for a plan's options, once it probed a link. */
export function withDriver(): { driver?: Seat } {
  const seat = driverSeat();
  return seat ? { driver: seat } : {};
}
