import { ConfigError } from "../errors/errors";

/**
 * modules.ts for a browser tab: a page runs only the code bundled into it, so custom classes
 * come from a page built with them; a tab is never given files to load.
 */
export function loadModules(files: readonly string[]): void {
  if (files.length > 0)
    throw new ConfigError(`a browser tab cannot load ${files.join(", ")}`, {
      hint: "bundle custom layers into the worker page (MESHTRAIN_PAGE_MODULES, docs/browser-workers.md)",
    });
}

/** The modules this worker loaded: none in a tab. */
export function loadedModules(): readonly string[] {
  return [];
}

/** What to do about a class the model names that the worker page was not built with. */
export function unknownClassHint(className: string): string {
  return `"${className}" is not a TF.js built-in and the worker page was not built with a module that registers it: build a page with it (MESHTRAIN_PAGE_MODULES=./that-file.js node scripts/build-browser.js --out page-dir) and start the driver with MESHTRAIN_WORKER_PAGE=page-dir (docs/browser-workers.md). Tabs never run code sent to them.`;
}
