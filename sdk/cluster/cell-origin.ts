/**
 * Which notebook cell is running: meshtrain's kernel sets it before each cell (the cell's id
 * where the front end sends one, as JupyterLab and Notebook 7 do, else its code), so that a
 * cluster knows the cell that launched it and a re-run of that cell can replace it. A
 * Symbol.for key on globalThis: the SDK never imports the kernel's code. Unset in scripts.
 */
export const CURRENT_CELL = Symbol.for("meshtrain.currentCell");

/** The running cell's identity, or undefined outside meshtrain's kernel. */
export function currentCell(): string | undefined {
  const cell = (globalThis as Record<symbol, unknown>)[CURRENT_CELL];
  return typeof cell === "string" ? cell : undefined;
}
