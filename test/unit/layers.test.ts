import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as ts from "typescript";

/**
 * The folders of sdk/, in layers: a folder imports only folders below it (type-only imports
 * included), and the two sides never meet: what runs in a worker process (worker, roles,
 * collectives) and what runs in the driver (cluster ... metrics) import only the shared
 * folders below both. ARCHITECTURE.md draws this table.
 */
type Side = "top" | "driver" | "worker" | "shared";
export const LAYERS: ReadonlyArray<{ folder: string; side: Side }> = [
  { folder: "(root)", side: "top" }, // index.ts: the public API
  { folder: "cli", side: "top" }, // the meshtrain command: driver and worker commands alike
  { folder: "cluster", side: "driver" }, // builder, launch, Cluster, TrainingRun, live clusters
  { folder: "launchers", side: "driver" }, // ssh, Slurm, Kubernetes, fromEnv
  { folder: "strategies", side: "driver" }, // each strategy's planner and driver program; the table
  { folder: "driver", side: "driver" }, // the fit: its loops, watchers, options, checkpoints
  { folder: "members", side: "driver" }, // the driver's view of workers: handles, local processes, output
  { folder: "viz", side: "driver" }, // figures and diagrams
  { folder: "metrics", side: "driver" }, // records and measures
  { folder: "worker", side: "worker" }, // the worker process: entry points, host, communication thread
  { folder: "roles", side: "worker" }, // what a worker does for each strategy, and the table of roles
  { folder: "compute", side: "worker" }, // what every role computes with: the slice's gradient, update rules, model state, step health
  { folder: "collectives", side: "worker" }, // ring all-reduce, pipeline links
  { folder: "backends", side: "shared" }, // TF.js backends and native kernels (the driver's own TF.js uses them too)
  { folder: "plan", side: "shared" }, // plans as data; memory and cost models (workers check what they hold)
  { folder: "model", side: "shared" }, // the user's model as both sides build it: topology, optimizers, weights
  { folder: "transport", side: "shared" }, // authenticated links and channels
  { folder: "data", side: "shared" }, // datasets
  { folder: "config", side: "shared" }, // configuration, validated
  { folder: "protocol", side: "shared" }, // the wire vocabulary: messages, frames, formats, names
  { folder: "util", side: "shared" },
  { folder: "errors", side: "shared" },
];

/** Imports that cross a rule on purpose, each with its reason. */
const EXCEPTIONS: ReadonlyArray<{ from: string; to: string; why: string }> = [
  { from: "launchers/spmd-member.ts", to: "worker/main.ts", why: "fromEnv() on a rank other than 0 turns that process into the rank's worker, loading the worker's code there only" },
];

const SDK = path.join(__dirname, "..", "..", "..", "sdk");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));
}

/** Every relative module a file names: imports and re-exports (type-only too), import() types, require() and import() calls. */
export function importedSpecifiers(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) found.push(n.moduleSpecifier.text);
    if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) found.push(n.argument.literal.text);
    if (ts.isCallExpression(n) && (n.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(n.expression) && n.expression.text === "require"))) {
      const a = n.arguments[0];
      if (a && ts.isStringLiteral(a)) found.push(a.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found.filter((s) => s.startsWith("."));
}

function folderOf(rel: string): string {
  const parts = rel.split(/[\\/]/);
  return parts.length > 1 ? parts[0]! : "(root)";
}

/** What is wrong with an import from `from` to `to` (paths relative to sdk/), or null. */
export function layerProblem(from: string, to: string): string | null {
  const a = folderOf(from), b = folderOf(to);
  if (a === b) return null;
  const la = LAYERS.findIndex((l) => l.folder === a), lb = LAYERS.findIndex((l) => l.folder === b);
  if (la < 0 || lb < 0) return `${la < 0 ? a : b}/ is not in the table of layers (test/unit/layers.test.ts): place it`;
  if (EXCEPTIONS.some((e) => e.from === from && e.to === to)) return null;
  if (lb < la) return `${from} imports ${to}: ${a}/ is below ${b}/`;
  const sa = LAYERS[la]!.side, sb = LAYERS[lb]!.side;
  if ((sa === "driver" && sb === "worker") || (sa === "worker" && sb === "driver")) return `${from} imports ${to}: the ${sa}'s side never loads the ${sb}'s`;
  return null;
}

test("every import goes down the table of layers, and neither side imports the other", () => {
  const files = sourceFiles(SDK);
  assert.ok(files.length > 150, `found ${files.length} files`);
  const problems: string[] = [];
  for (const f of files) {
    const from = path.relative(SDK, f);
    for (const spec of importedSpecifiers(f, fs.readFileSync(f, "utf8"))) {
      const abs = path.resolve(path.dirname(f), spec);
      const target = [`${abs}.ts`, path.join(abs, "index.ts")].find((c) => fs.existsSync(c));
      if (!target) continue;
      const p = layerProblem(from, path.relative(SDK, target));
      if (p) problems.push(p);
    }
  }
  assert.deepEqual(problems, []);
});

test("every folder of sdk/ has its place in the table", () => {
  const folders = fs.readdirSync(SDK, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  const missing = folders.filter((f) => !LAYERS.some((l) => l.folder === f));
  assert.deepEqual(missing, [], "add each new folder to LAYERS, above the folders it imports");
});

test("the rule itself can fail: upward, cross-side and type-only imports are found", () => {
  assert.match(layerProblem("protocol/messages.ts", "config/cluster-spec.ts") ?? "", /protocol\/ is below config\//);
  assert.match(layerProblem("driver/fit.ts", "roles/table.ts") ?? "", /the driver's side never loads the worker's/);
  assert.match(layerProblem("roles/data/replica.ts", "metrics/records.ts") ?? "", /roles\/ is below metrics\//);
  assert.equal(layerProblem("cluster/cluster.ts", "driver/fit.ts"), null);
  const specs = importedSpecifiers("x.ts", 'import type { A } from "../a";\nexport { B } from "./b";\ntype C = typeof import("../c");\nconst d = require("../d");\n');
  assert.deepEqual(specs, ["../a", "./b", "../c", "../d"]);
});
