import * as fs from "node:fs";
import * as path from "node:path";
import { isMainThread } from "node:worker_threads";

/**
 * Preloaded into worker processes (NODE_OPTIONS="--require .../module-report.js") by the test of
 * what a worker loads: when the process exits it writes every module it loaded and its resident
 * memory to MESHTRAIN_MODULE_REPORT/<pid>.json.
 */
const dir = process.env.MESHTRAIN_MODULE_REPORT;
// The main thread, where a worker computes: its communication thread has its own modules (sockets, links).
if (dir && isMainThread) {
  const write = (): void => {
    const report = { pid: process.pid, argv: process.argv.slice(1), modules: Object.keys(require.cache), rssBytes: process.memoryUsage().rss };
    fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(report));
  };
  process.on("exit", write);
  // A closed cluster stops its local workers with SIGTERM, which ends a process without "exit".
  process.on("SIGTERM", () => process.exit(143));
}
