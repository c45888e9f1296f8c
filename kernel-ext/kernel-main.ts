#!/usr/bin/env node
import * as fs from "node:fs";
import * as path from "node:path";
import Module from "node:module";
import { reportCellErrors } from "./cell-errors";
import { honourStopOnError } from "./stop-on-error";
import { trackCells } from "./cell-context";
import { bindBeforeReading } from "./bind-first";
import { drawValuesWithoutNewline } from "./quiet-values";

/**
 * The Jupyter kernel `meshtrain kernel install` registers: tslab, started so that a notebook in
 * any folder can import meshtrain, TF.js and their dependencies from the installation that
 * registered the kernel (a folder's own node_modules still come first for code; for types,
 * TypeScript tries this installation first). tslab resolves both from the notebook's folder
 * alone, so a notebook outside the project failed with "Cannot find module 'meshtrain'".
 */

/** The node_modules folders of this installation: the one meshtrain sits in, and its own. */
export function installationModules(packageRoot: string): string[] {
  const dirs = [path.join(packageRoot, "node_modules")];
  if (path.basename(path.dirname(packageRoot)) === "node_modules") dirs.unshift(path.dirname(packageRoot));
  return dirs.filter((d) => fs.existsSync(d));
}

function resolveAtRuntime(dirs: readonly string[]): void {
  process.env.NODE_PATH = [...dirs, ...(process.env.NODE_PATH ?? "").split(path.delimiter).filter(Boolean)].join(
    path.delimiter,
  );
  // NODE_PATH is read once at start-up; this process started before it was set.
  (Module as unknown as { _initPaths(): void })._initPaths();
}

type PathFn = (p: string, ...rest: unknown[]) => unknown;

/**
 * TypeScript (tslab's own copy) finds this installation's modules where Node's resolution walks
 * last, `/node_modules`: its file system answers for a path there that does not exist with the
 * same path in `dirs`. (tslab gives TypeScript no option to add a search path, and its module's
 * exports cannot be replaced; its file system object can be extended.)
 */
function resolveTypes(tslabDir: string, dirs: readonly string[]): void {
  const ts = require(require.resolve("@tslab/typescript-for-tslab", { paths: [tslabDir] })) as {
    sys: Record<string, unknown>;
  };
  const top = path.join(path.parse(process.cwd()).root, "node_modules");
  const mapped = (p: string): string | undefined => {
    if (typeof p !== "string" || !(p === top || p.startsWith(top + path.sep)) || fs.existsSync(p)) return undefined;
    const rest = path.relative(top, p);
    return dirs.map((d) => path.join(d, rest)).find((q) => fs.existsSync(q));
  };
  for (const name of ["fileExists", "directoryExists", "readFile", "realpath", "getDirectories", "getModifiedTime"]) {
    const original = ts.sys[name] as PathFn | undefined;
    if (typeof original !== "function") continue;
    ts.sys[name] = (p: string, ...rest: unknown[]): unknown => original.call(ts.sys, mapped(p) ?? p, ...rest);
  }
}

function main(): void {
  const packageRoot = path.join(__dirname, "..", "..");
  const dirs = installationModules(packageRoot);
  resolveAtRuntime(dirs);
  const tslabMain = require.resolve("tslab/dist/main.js", { paths: dirs });
  const tslabDist = path.dirname(tslabMain);
  resolveTypes(path.dirname(tslabDist), dirs);
  const jupyter = require(path.join(tslabDist, "jupyter.js")) as Parameters<typeof reportCellErrors>[0] &
    Parameters<typeof honourStopOnError>[0] &
    Parameters<typeof trackCells>[0] &
    Parameters<typeof bindBeforeReading>[0];
  // tslab's zeromq, the copy its own init would load.
  bindBeforeReading(
    jupyter,
    require(require.resolve("zeromq", { paths: [tslabDist] })) as Parameters<typeof bindBeforeReading>[1],
  );
  trackCells(jupyter);
  honourStopOnError(jupyter);
  reportCellErrors(jupyter);
  // meshtrain's own kernel draws plans, runs and figures that end a cell without an import: the
  // notebook hooks are installed here (importing "meshtrain/notebook" in a cell changes nothing).
  require("./index");
  drawValuesWithoutNewline();
  // As `tslab kernel --config-path <file>` does, but always this tslab: the one patched above,
  // not one found in the notebook's folder.
  const argv = process.argv.slice(2);
  const at = argv.indexOf("--config-path");
  const configPath = at >= 0 ? argv[at + 1] : undefined;
  if (argv[0] !== "kernel" || !configPath) {
    process.stderr.write(
      "usage: kernel-main.js kernel --config-path <connection file> (Jupyter runs this; see `meshtrain kernel install`)\n",
    );
    process.exit(2);
  }
  (
    require(tslabMain) as {
      startKernel(o: { configPath: string; enableFindLocal: boolean; jsKernel: boolean; globalVersion: string }): void;
    }
  ).startKernel({ configPath, enableFindLocal: false, jsKernel: false, globalVersion: "" });
}

if (require.main === module) main();
