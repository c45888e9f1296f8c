import * as path from "node:path";
import { bundleRoot } from "../../util/bundle-root";

/** In the worker bundle: probe-main.js at its root, wherever in the bundle the code asking runs. */
export const PROBE = path.join(bundleRoot(), "probe-main.js");
