import * as path from "node:path";
import { bundleRoot } from "../util/bundle-root";

/** In the worker bundle: local-main.js at its root (only the bundle's benchmark starts local workers). */
export function localWorkerEntry(): string {
  return path.join(bundleRoot(), "local-main.js");
}
