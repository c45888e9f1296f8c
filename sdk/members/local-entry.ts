import * as path from "node:path";

/** The program a driver forks for each local worker: the package's compiled worker/local-main.js. */
export function localWorkerEntry(): string {
  return path.join(__dirname, "..", "worker", "local-main.js");
}
