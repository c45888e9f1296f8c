import * as path from "node:path";

/** Where benchmarks write their results: the repository's bench/results. */
export const RESULTS_ROOT = path.join(__dirname, "..", "..", "bench", "results");

/** How a benchmark is run from here, for its results' "Command:" line. */
export function commandFor(script: string): string {
  return `\`npm run ${script}\``;
}
