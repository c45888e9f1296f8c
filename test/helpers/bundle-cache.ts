import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { userCache } from "../../sdk/launchers/user-cache";

/**
 * Runs `use` with this process's worker-bundle cache ($XDG_CACHE_HOME, where the launchers keep
 * the bundle they make) in a folder of its own, removed after: a test's launch makes its bundle
 * anew and leaves none in the user's cache. The portable addon's cache (addons/) stays the
 * user's, linked in: compiling it is most of a bundle's making, and its key is its sources.
 */
export async function withOwnBundleCache<T>(use: () => Promise<T>): Promise<T> {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-bundle-cache-"));
  const addons = userCache("addons");
  fs.mkdirSync(addons, { recursive: true });
  fs.mkdirSync(path.join(cache, "meshtrain"));
  fs.symlinkSync(addons, path.join(cache, "meshtrain", "addons"));
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
