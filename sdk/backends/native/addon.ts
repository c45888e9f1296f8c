import * as fs from "node:fs";
import * as path from "node:path";
import { chooseBlasCore } from "./blas-core";
import type { AddonLoad, NativeAddon } from "./addon-api";

export { ACT, BINARY, REDUCE, UNARY, type AddonLoad, type NativeAddon } from "./addon-api";

const ROOT = path.join(__dirname, "..", "..", "..", "..");
const ADDON = path.join(ROOT, "native", "build", "meshtrain_native.node");
const STATUS = path.join(ROOT, "native", "build", "status.json");

let loaded: AddonLoad | undefined;

/** Loads the addon built by `npm install` (scripts/build-native.js), or says why it cannot. */
export function loadAddon(): AddonLoad {
  if (loaded) return loaded;
  if (!fs.existsSync(ADDON)) {
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
  try {
    chooseBlasCore();
    loaded = { ok: true, addon: require(ADDON) as NativeAddon };
  } catch (err) {
    loaded = { ok: false, reason: `it did not load: ${(err as Error).message.split("\n")[0]}` };
  }
  return loaded;
}
