import * as fs from "node:fs";
import * as path from "node:path";

/**
 * In the worker bundle: its root, the folder holding meshtrain-worker.js, found by walking up
 * from this code's file (the root itself, comm/ for the communication thread, bench/<name>/ for
 * the bundle's benchmark). Bundle variants (*.bundle.ts) find their files from it.
 */
export function bundleRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "meshtrain-worker.js"))) return dir;
    if (path.dirname(dir) === dir) return __dirname;
  }
}
