import * as path from "node:path";

/** The folder holding native/build/meshtrain_native.node: the package's root, four folders up from this file in dist/. */
export const ADDON_ROOT = path.join(__dirname, "..", "..", "..", "..");

/** npm install built the addon, or said why not: nothing is rebuilt at run time here (the bundle's variant rebuilds). */
export function rebuildAddon(): string {
  return "npm install builds it (node scripts/build-native.js)";
}
