/**
 * How meshtrain objects draw themselves in a notebook without the SDK importing any notebook
 * code: an object offers MIME bundles under DISPLAY; the notebook integration (kernel-ext)
 * installs a hook on globalThis; when a cell's value is printed and the hook is there, the
 * bundles are displayed. Symbol.for keys survive the SDK being loaded twice (a re-run cell).
 */
export const DISPLAY = Symbol.for("meshtrain.display");
export const NOTEBOOK_HOOK = Symbol.for("meshtrain.notebook");
const INSPECT = Symbol.for("nodejs.util.inspect.custom");

/** MIME type -> content, as Jupyter's display_data carries it. */
export type MimeBundle = Record<string, unknown>;

export interface NotebookHook {
  display(bundle: MimeBundle): void;
}

export function notebookHook(): NotebookHook | undefined {
  return (globalThis as Record<symbol, NotebookHook | undefined>)[NOTEBOOK_HOOK];
}

export interface Displayable {
  [DISPLAY](): MimeBundle[];
}

export function isDisplayable(x: unknown): x is Displayable {
  return typeof x === "object" && x !== null && typeof (x as Record<symbol, unknown>)[DISPLAY] === "function";
}

/**
 * Adds, as non-enumerable properties (the object stays plain data for JSON), the bundles it
 * displays as, and a console/inspect form: in a notebook with the hook, printing it displays
 * the bundles; elsewhere it prints as `text()`.
 */
export function makeDisplayable<T extends object>(
  obj: T,
  bundles: () => MimeBundle | MimeBundle[],
  text: () => string,
): T {
  const all = (): MimeBundle[] => {
    const b = bundles();
    return Array.isArray(b) ? b : [b];
  };
  Object.defineProperty(obj, DISPLAY, { value: all, enumerable: false });
  Object.defineProperty(obj, INSPECT, {
    enumerable: false,
    value: () => {
      const hook = notebookHook();
      if (!hook) return text();
      for (const b of all()) hook.display(b);
      return "";
    },
  });
  return obj;
}

/** A figure that draws itself when it is a notebook cell's value (Plotly + static SVG fallback). */
export function displayableFigure<F extends { layout: { title?: { text: string } } }>(
  fig: F,
  bundle: (f: F) => MimeBundle,
): F {
  return makeDisplayable(
    fig,
    () => bundle(fig),
    () => fig.layout.title?.text ?? "figure",
  );
}
