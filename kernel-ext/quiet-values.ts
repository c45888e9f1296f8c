import { DISPLAY, isDisplayable, notebookHook } from "../sdk/viz/displayable";

type Log = (...args: unknown[]) => void;
const ORIGINAL = Symbol.for("meshtrain.console.log");

/**
 * tslab prints a cell's value with `console.log(value)`. A meshtrain object's inspect form
 * displays its bundles and returns "", so console.log still wrote "\n": every drawn plan, run
 * or figure was followed by an empty stdout output. Here a lone displayable value is drawn
 * and nothing is written. tslab keeps the console.log it finds when its kernel starts, so this
 * runs before that (meshtrain's own kernel); in another tslab kernel the empty line stays.
 */
export function drawValuesWithoutNewline(): void {
  const g = globalThis as Record<symbol, unknown>;
  const original = (g[ORIGINAL] as Log | undefined) ?? console.log;
  g[ORIGINAL] = original;
  console.log = (...args: unknown[]): void => {
    const hook = notebookHook();
    const [value] = args;
    if (args.length === 1 && hook && isDisplayable(value)) {
      for (const bundle of value[DISPLAY]()) hook.display(bundle);
      return;
    }
    original.apply(console, args);
  };
}
