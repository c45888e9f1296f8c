import * as os from "node:os";

/** The memory this machine has, in bytes (what a worker may use at most). */
export function machineMemoryBytes(): number {
  return os.totalmem();
}
