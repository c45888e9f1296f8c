import * as os from "node:os";
import type { HandlingCost, Seat } from "../plan/core-load";
import { allowedCores } from "../util/cpu-set";
import { machineName } from "../util/machine-name";

/**
 * What the driver's own messages cost its CPU (a request and its answer, and per MB sent), from
 * its side of the last link probe: one per process, as the driver is.
 */
let handling: HandlingCost | undefined;

/** Keeps the driver's side of a link probe; one that could not be measured keeps the last. */
export function measuredDriver(cost: HandlingCost | undefined): void {
  handling = cost ?? handling;
}

/** The driver as plans see it (where it runs, what its messages cost it), once it probed a link. */
export function driverSeat(): Seat | undefined {
  if (!handling) return undefined;
  const cores = allowedCores();
  return {
    host: machineName(),
    cpus: os.availableParallelism(),
    ...(cores ? { cores } : {}),
    handling: { ...handling },
  };
}
