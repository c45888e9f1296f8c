import * as path from "node:path";

/** The adapter probe's program: probe-main.js beside this file in the package. */
export const PROBE = path.join(__dirname, "probe-main.js");
