import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Garbage collections in this thread (without --expose-gc at start), then again after a turn
 * of the event loop. One full collection is not enough: V8 frees a dead array's memory when
 * the collection after the one that found it dead begins, so after a single one a released
 * fit's whole training state (tens of MiB) was still counted as the process's own; and some
 * memory is let go only by work V8 leaves for a later task (after a profile under a memory
 * cap, 19 MiB on three workers of four).
 */
export async function collectGarbage(): Promise<void> {
  const gc = exposedGc();
  // A full collection finds the dead; a young one after it (a millisecond, against 10-25 for a
  // full one on a worker's heap) begins the next collection, which frees their arrays' memory.
  const collect = (): void => {
    gc();
    gc({ type: "minor" });
  };
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
}

/** One full collection in this thread: what is dead goes, its arrays' memory by the next collection V8 makes. */
export function collectOnce(): void {
  exposedGc()();
}

/** V8's gc(), exposed without --expose-gc at start. */
function exposedGc(): (o?: { type: "major" | "minor" }) => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as (o?: { type: "major" | "minor" }) => void;
}
