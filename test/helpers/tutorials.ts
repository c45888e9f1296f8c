import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { chromiumPath, ensureDebianPackages, jupyterReady, PYTHON } from "./system-deps";

const ROOT = path.join(__dirname, "..", "..", "..");
const NOTEBOOKS = path.join(ROOT, "notebooks");
/** Where the executed notebooks and their HTML exports go. */
export const OUT = path.join(NOTEBOOKS, "out");

/**
 * The tutorial notebooks in order, split in two halves of about equal running time (each half
 * a test file of its own, so that the two run in the test runner's two lanes): the first six,
 * and the rest.
 */
export function tutorials(half: "first" | "rest"): string[] {
  const all = fs.readdirSync(NOTEBOOKS).filter((f) => /^\d\d-.*\.ipynb$/.test(f)).sort();
  assert.ok(all.length >= 4, `found ${all.join(", ")}`);
  return half === "first" ? all.slice(0, 6) : all.slice(6);
}

export function needJupyterAndChromium(): void {
  ensureDebianPackages("Jupyter (nbclient, nbconvert)", ["jupyter-client", "jupyter-nbconvert", "python3-nbclient", "python3-ipykernel"], jupyterReady);
  ensureDebianPackages("Chromium", ["chromium"], () => chromiumPath() !== null);
}

/**
 * Runs `notebooks` top to bottom, headless, on the project's tslab kernel (a failing cell is
 * reported with its real error), and exports each to HTML with meshtrain's template.
 */
export function runTutorials(notebooks: readonly string[]): void {
  const r = spawnSync(
    PYTHON,
    [path.join(ROOT, "scripts", "notebooks.py"), "--out", OUT, "--plotly", require.resolve("plotly.js-dist-min/plotly.min.js"), "--timeout", "600", ...notebooks.map((n) => path.join(NOTEBOOKS, n))],
    { encoding: "utf8", env: { ...process.env, JUPYTER_PATH: path.join(ROOT, "jupyter") }, timeout: 29 * 60_000 },
  );
  process.stdout.write(r.stdout);
  assert.equal(r.status, 0, `notebooks failed:\n${r.stdout}\n${r.stderr}`);
  for (const n of notebooks) {
    const executed = JSON.parse(fs.readFileSync(path.join(OUT, n), "utf8")) as { cells: Array<{ cell_type: string; outputs?: Array<{ output_type: string; name?: string }> }> };
    const code = executed.cells.filter((c) => c.cell_type === "code");
    assert.ok(code.every((c) => !(c.outputs ?? []).some((o) => o.output_type === "error")), `${n} has an error output`);
    assert.ok(fs.statSync(path.join(OUT, n.replace(/\.ipynb$/, ".html"))).size > 100_000, `${n} was exported`);
  }
}
