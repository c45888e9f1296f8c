import * as path from "node:path";
import { shellQuote } from "./ssh-target";

/**
 * The shell command line that runs meshtrain on another machine: the one given, else this
 * driver's own node and meshtrain paths (a shared or identical install, as ipyparallel's and
 * horovodrun's launchers assume).
 */
export function meshtrainCommand(given: string | undefined): string {
  return given ?? [process.execPath, path.join(__dirname, "..", "cli", "main.js")].map(shellQuote).join(" ");
}
