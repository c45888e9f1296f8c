import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError } from "../errors/errors";
import { VERSION } from "../protocol/sdk-version";

/** The package's root (dist/sdk/cli -> the folder with package.json). */
const PACKAGE_ROOT = path.join(__dirname, "..", "..", "..");

export { KERNEL_NAME } from "./names";
import { KERNEL_NAME } from "./names";

/** Where Jupyter looks for a user's kernels (jupyter_core's rules for the data directory). */
function userDataDir(): string {
  if (process.env.JUPYTER_DATA_DIR) return process.env.JUPYTER_DATA_DIR;
  if (process.platform === "darwin") return path.join(os.homedir(), "Library", "Jupyter");
  if (process.platform === "win32") return path.join(process.env.APPDATA ?? os.homedir(), "jupyter");
  return path.join(process.env.XDG_DATA_HOME ?? path.join(os.homedir(), ".local", "share"), "jupyter");
}

export interface KernelInstall {
  name: string;
  /** Installs under <prefix>/share/jupyter (a virtualenv or conda prefix) instead of the user's data directory. */
  prefix?: string;
}

/**
 * Registers the Jupyter kernel: tslab started through kernel-main.js of this installation, by
 * absolute paths (the node running this command, and this package), so it works from any
 * folder and imports this meshtrain wherever the notebook is. Returns the kernel's directory.
 */
export function installKernel(o: KernelInstall): string {
  const main = path.join(PACKAGE_ROOT, "dist", "kernel-ext", "kernel-main.js");
  if (!fs.existsSync(main))
    throw new ConfigError(`${main} is missing: this meshtrain is not built`, {
      hint: "run npm run build in the meshtrain folder, or install meshtrain from npm",
    });
  try {
    require.resolve("tslab/dist/main.js", { paths: [PACKAGE_ROOT] });
  } catch {
    throw new ConfigError("tslab is not installed beside meshtrain", {
      hint: "run npm install in the folder that has meshtrain in node_modules",
    });
  }
  const dir = path.join(
    o.prefix ? path.join(path.resolve(o.prefix), "share", "jupyter") : userDataDir(),
    "kernels",
    o.name,
  );
  fs.mkdirSync(dir, { recursive: true });
  const spec = {
    argv: [process.execPath, main, "kernel", "--config-path", "{connection_file}"],
    display_name: o.name === KERNEL_NAME ? "TypeScript (meshtrain)" : `TypeScript (meshtrain, ${o.name})`,
    language: "typescript",
    // tslab ignores interrupt_request messages: the interrupt button must send SIGINT.
    interrupt_mode: "signal",
    metadata: { meshtrain: { version: VERSION, package: PACKAGE_ROOT } },
  };
  fs.writeFileSync(path.join(dir, "kernel.json"), `${JSON.stringify(spec, null, 2)}\n`);
  return dir;
}

/** Debian's python3 when it is there (the one with Jupyter's packages), else python3 on PATH. */
function python(): string {
  return fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

export interface ExportOptions {
  out?: string;
  execute: boolean;
  kernel: string;
  timeoutSeconds: number;
}

/**
 * Writes the notebook as HTML with its SVG diagrams and Plotly figures drawn
 * (jupyter/export_html.py); with `execute`, the executed notebook beside it (NAME.nbconvert.ipynb,
 * as `jupyter nbconvert --execute` names it). Returns the files, and with `execute` whether a cell not tagged
 * `raises-exception` failed or did not run (its error is on stderr; the page shows every output
 * up to it).
 */
export function exportNotebook(
  notebook: string,
  o: ExportOptions,
): { file: string; executed: string | null; cellFailed: boolean } {
  if (!fs.existsSync(notebook))
    throw new ConfigError(`${notebook} does not exist`, { hint: "give the path of an .ipynb file" });
  const out = o.out ?? notebook.replace(/\.ipynb$/i, "") + ".html";
  // Beside the page, named as `jupyter nbconvert --execute` names it: never over the notebook itself.
  const executed = o.execute ? out.replace(/\.html?$/i, "") + ".nbconvert.ipynb" : null;
  const args = [
    path.join(PACKAGE_ROOT, "jupyter", "export_html.py"),
    notebook,
    "--plotly",
    require.resolve("plotly.js-dist-min/plotly.min.js"),
    "--out",
    out,
    "--kernel",
    o.kernel,
    "--timeout",
    String(o.timeoutSeconds),
    ...(executed ? ["--execute", "--executed", executed] : []),
  ];
  const r = spawnSync(python(), args, { stdio: ["ignore", "ignore", "inherit"] });
  if (r.error)
    throw new ConfigError(`could not run ${python()}: ${r.error.message}`, {
      hint: "install Python 3 with Jupyter's nbconvert (Debian: apt-get install jupyter-nbconvert python3-nbclient)",
    });
  if (r.status === 3) return { file: out, executed, cellFailed: true };
  if (r.status !== 0)
    throw new ConfigError(`exporting ${notebook} failed (exit code ${r.status}); its error is above`, {
      hint: "nbconvert and nbformat must be importable by python3 (Debian: apt-get install jupyter-nbconvert python3-nbclient)",
    });
  return { file: out, executed, cellFailed: false };
}
