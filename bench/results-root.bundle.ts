import * as path from "node:path";

/** In the worker bundle (`node meshtrain-worker.js bench`): the folder it is run from, not the bundle's own. */
export const RESULTS_ROOT = path.join(process.cwd(), "meshtrain-bench-results");

/** The bundle runs one benchmark, bench:gpu, by its own command. */
export function commandFor(): string {
  return "`node meshtrain-worker.js bench`";
}
