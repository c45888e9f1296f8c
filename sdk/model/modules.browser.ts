import { ConfigError } from "../errors/errors";

/**
 * modules.ts for a browser tab: a page runs only the code bundled into it, so custom classes
 * come from a page built with them; a tab is never given files to load.
 */
export function loadModules(files: readonly string[]): void {
  if (files.length > 0) throw new ConfigError(`a browser tab cannot load ${files.join(", ")}`, { hint: "bundle custom layers into the worker page (see docs/browser-workers.md)" });
}

/** The modules this worker loaded: none in a tab. */
export function loadedModules(): readonly string[] {
  return [];
}
