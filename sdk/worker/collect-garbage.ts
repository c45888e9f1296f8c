import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Full garbage collections in this thread (without --expose-gc at start) until the arrays'
 * memory stops falling, then again after a turn of the event loop. One is not enough: V8
 * frees a dead array's memory when the collection after the one that found it dead begins,
 * so after a single one a released fit's whole training state (tens of MiB) was still
 * counted as the process's own; and some memory is let go only by work V8 leaves for a later
 * task (after a profile under a memory cap, 19 MiB on three workers of four).
 */
export async function collectGarbage(): Promise<void> {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const untilSteady = (): void => {
    let external = Infinity;
    for (let i = 0; i < 4 && process.memoryUsage().external < external; i++) {
      external = process.memoryUsage().external;
      gc();
    }
  };
  untilSteady();
  await new Promise((resolve) => setImmediate(resolve));
  untilSteady();
}
