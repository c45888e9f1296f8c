import { AbortError } from "../errors/errors";
import type { JoinListener } from "./join-listener";
import { register, unregister } from "./live-clusters";

/**
 * While launch() waits for workers to join (a Slurm job pending, ssh hosts starting, a
 * colleague's workers), Ctrl-C or the notebook's interrupt ends the wait: the launch rejects
 * with AbortError, and its launcher's workers are ended (a job cancelled) as on close().
 */
export async function interruptibly<T>(joins: JoinListener | undefined, wait: () => Promise<T>): Promise<T> {
  if (!joins) return wait();
  const waiting = {
    describe: () => `a launch waiting for workers to join ${joins.url}`,
    interrupt: () => {
      joins.abort(
        new AbortError(
          "launch interrupted (SIGINT: Ctrl-C or the notebook's interrupt) while waiting for workers to join",
          { hint: "workers started for it were ended; launch again when ready" },
        ),
      );
      return true;
    },
    close: () => joins.close(),
    launching: true,
  };
  register(waiting);
  try {
    return await wait();
  } finally {
    unregister(waiting);
  }
}
