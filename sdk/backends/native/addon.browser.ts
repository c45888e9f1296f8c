import type { AddonLoad } from "./addon-api";

export { ACT, BINARY, REDUCE, UNARY, type AddonLoad, type NativeAddon } from "./addon-api";

/** addon.ts for a browser tab: there is no native addon there; what uses it takes its TF.js path. */
export function loadAddon(): AddonLoad {
  return { ok: false, reason: "a browser tab has no native addon" };
}
