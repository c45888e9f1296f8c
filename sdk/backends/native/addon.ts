import * as fs from "node:fs";
import * as path from "node:path";
import { chooseBlasCore } from "./blas-core";
import { ADDON_ROOT, rebuildAddon } from "./addon-root";
import type { AddonLoad, NativeAddon } from "./addon-api";

export { ACT, BINARY, REDUCE, UNARY, type AddonLoad, type NativeAddon } from "./addon-api";

const ADDON = path.join(ADDON_ROOT, "native", "build", "meshtrain_native.node");
const STATUS = path.join(ADDON_ROOT, "native", "build", "status.json");

let loaded: AddonLoad | undefined;

/** Loads the addon built by `npm install` (scripts/build-native.js), or says why it cannot. */
export function loadAddon(): AddonLoad {
  if (loaded) return loaded;
  // A worker bundle made where no compiler was holds no prebuilt addon: it is built on the host.
  if (!fs.existsSync(ADDON) && rebuildAddon() !== "") {
    let reason = "it was not built (run npm install, or node scripts/build-native.js)";
    try {
      const status = JSON.parse(fs.readFileSync(STATUS, "utf8")) as { ok: boolean; reason?: string };
      if (!status.ok && status.reason) reason = status.reason;
    } catch {
      // No status file: the build step never ran.
    }
    loaded = { ok: false, reason };
    return loaded;
  }
  chooseBlasCore();
  const first = tryRequire();
  if (first === null) return loaded!;
  // A worker bundle's prebuilt addon is rebuilt on a host where it does not load; elsewhere nothing changes.
  const why = rebuildAddon();
  if (why === "" && tryRequire() === null) return loaded!;
  loaded = { ok: false, reason: `it did not load: ${first}${why ? `; ${why}` : ""}` };
  return loaded;
}

/** Loads the addon into `loaded`; null if it loaded, else the first line of why not. */
function tryRequire(): string | null {
  try {
    loaded = { ok: true, addon: require(ADDON) as NativeAddon };
    return null;
  } catch (err) {
    return (err as Error).message.split("\n")[0]!;
  }
}
