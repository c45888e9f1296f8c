import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/**
 * Runs `use` with this process's worker-bundle cache ($XDG_CACHE_HOME, where the launchers keep
 * the bundle they make) in a folder of its own, removed after: a test's launch makes its bundle
 * anew and leaves none in the user's cache.
 */
export async function withOwnBundleCache<T>(use: () => Promise<T>): Promise<T> {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-bundle-cache-"));
  const saved = process.env.XDG_CACHE_HOME;
  process.env.XDG_CACHE_HOME = cache;
  try {
    return await use();
  } finally {
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
    fs.rmSync(cache, { recursive: true, force: true });
  }
}
