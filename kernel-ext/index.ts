import { inspect } from "node:util";
import { FIT_OBSERVER } from "../sdk/metrics/observer";
import { figureBundle } from "../sdk/viz/bundles";
import { DISPLAY, isDisplayable, NOTEBOOK_HOOK, type MimeBundle, type NotebookHook } from "../sdk/viz/displayable";
import type { Figure } from "../sdk/viz/figure";
import { liveFitObserver } from "./live-fit";
import { sendBundle } from "./tslab-bridge";

/**
 * meshtrain in a tslab notebook (meshtrain's own kernel loads this module when it starts; in
 * another tslab kernel, `import { show } from "meshtrain/notebook"` once), and then
 * - a plan, a training run or a figure that ends a cell draws itself (placement diagram,
 *   summary, Plotly figures), and show(x) draws anything explicitly;
 * - every fit draws a live throughput plot under its cell, updated in place.
 * Importing it again (a re-run cell) replaces the hooks: nothing is installed twice.
 */

const hook: NotebookHook = { display: (bundle) => sendBundle(bundle) };

/** Draws plans, runs and figures that end a cell, and a live plot under every fit (what importing this module does). */
export function enable(): void {
  const g = globalThis as Record<symbol, unknown>;
  g[NOTEBOOK_HOOK] = hook;
  g[FIT_OBSERVER] = liveFitObserver;
}

/** Stops drawing: plans and runs print as text again, and fits show no live plot. */
export function disable(): void {
  const g = globalThis as Record<symbol, unknown>;
  delete g[NOTEBOOK_HOOK];
  delete g[FIT_OBSERVER];
}

function isFigure(x: unknown): x is Figure {
  return (
    typeof x === "object" && x !== null && Array.isArray((x as Figure).data) && typeof (x as Figure).layout === "object"
  );
}

/** Draws each item: meshtrain objects as themselves, figures with Plotly, anything else as text. */
export function show(...items: unknown[]): void {
  for (const item of items) {
    let bundles: MimeBundle[];
    if (isDisplayable(item)) bundles = item[DISPLAY]();
    else if (isFigure(item)) bundles = [figureBundle(item)];
    else if (typeof item === "string") bundles = [{ "text/markdown": item, "text/plain": item }];
    else bundles = [{ "text/plain": inspect(item, { depth: 4 }) }];
    for (const b of bundles) sendBundle(b);
  }
}

/** Draws raw SVG or HTML markup. */
export function html(markup: string): void {
  sendBundle({ "text/html": markup, "text/plain": "(html)" });
}

enable();
