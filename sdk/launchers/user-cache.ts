import * as os from "node:os";
import * as path from "node:path";

/** A folder of meshtrain's in this user's cache: $XDG_CACHE_HOME, else ~/.cache (the rule the hosts' shell applies too). */
export function userCache(sub: string): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "meshtrain", sub);
}
