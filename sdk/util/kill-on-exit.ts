import type { ChildProcess } from "node:child_process";

/** Every child handed to killOnExit that has not exited yet. */
const live = new Set<ChildProcess>();
let hooked = false;

/**
 * Kills `child` when this process exits, if it still runs: a driver that ends without close()
 * leaves no local worker, and no ssh client whose remote worker would keep running.
 */
export function killOnExit(child: ChildProcess): void {
  if (!hooked) {
    hooked = true;
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
  live.add(child);
  child.once("exit", () => live.delete(child));
}
