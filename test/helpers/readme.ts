import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";

/**
 * The README's fenced code blocks, and how the tests run each one as written. A block the table
 * does not place fails the unit test, so a new block gets run (or a reason) when it is added.
 */

export const ROOT = path.join(__dirname, "..", "..", "..");

export interface ReadmeBlock {
  lang: string;
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
}

export function readmeText(): string {
  return fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
}

export function readmeBlocks(text = readmeText()): ReadmeBlock[] {
  const blocks: ReadmeBlock[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (end < 0) throw new Error(`README.md:${i + 1}: a code fence that is never closed`);
    blocks.push({ lang: open[1]!, line: i + 1, code: lines.slice(i + 1, end).join("\n") + "\n" });
    i = end;
  }
  return blocks;
}

/**
 * How a block is run: "script" (a TypeScript program: type-checked, then run with node in a
 * scratch folder of this repository), "hosts" (on network namespaces with the addresses it names),
 * "tarball" (kernel-anywhere.test.ts, in the folder that installed `npm pack`'s tarball),
 * "output" (a sample of what meshtrain prints, not code), or a reason it is not run here.
 */
export type BlockRun = "script" | "hosts" | "tarball" | "output" | { notRun: string };

export const BLOCK_RUNS: ReadonlyArray<{ contains: string; run: BlockRun }> = [
  { contains: "npm install && npm run demo", run: { notRun: "`npm install` is CI's first step (as `npm ci`), `npm test` is the command this test runs under, and demo.test.ts runs `npm run demo` as written" } },
  { contains: 'cluster().workers(3).strategy("data").launch()', run: "script" },
  { contains: "[rank 1] chatty call", run: "output" },
  { contains: "meshtrain: stalled:", run: "output" },
  { contains: 'strategy("auto").launch()', run: "script" },
  { contains: 'strategy("ps", { mode: "async"', run: "script" },
  { contains: "elastic: { minWorkers: 2 }", run: "script" },
  { contains: "apt-get install jupyter-notebook", run: { notRun: "installs a Debian package and serves Jupyter until stopped; notebooks.test.ts runs every notebook on the kernelspec it finds through the same JUPYTER_PATH" } },
  { contains: "npm install /path/to/meshtrain", run: "tarball" },
  { contains: "npx meshtrain worker --host 0.0.0.0 --port 7070\n", run: "hosts" },
  { contains: 'connect(["ws://10.0.0.2:7070"', run: "hosts" },
  { contains: "--tls-cert cert.pem --tls-key key.pem", run: "hosts" },
  { contains: '.connect(["wss://10.0.0.2:7070"', run: "hosts" },
  { contains: "npm run bench ", run: { notRun: "runs for about 20 minutes on 2 cores and measures, never asserts, times; bench-smoke.test.ts runs every benchmark end to end with --quick" } },
];

/** The table's entry for a block; throws unless exactly one entry matches it. */
export function blockRun(b: ReadmeBlock): BlockRun {
  const hits = BLOCK_RUNS.filter((e) => b.code.includes(e.contains));
  if (hits.length !== 1) throw new Error(`README.md:${b.line}: ${hits.length} entries of BLOCK_RUNS match this ${b.lang || "untyped"} block; give it exactly one`);
  return hits[0]!.run;
}

export function blocksRun(run: BlockRun): ReadmeBlock[] {
  return readmeBlocks().filter((b) => blockRun(b) === run);
}

/** A scratch folder inside the repository, so a block's `import "meshtrain"` resolves as in a project. */
export function scratchDir(name: string): string {
  const dir = path.join(ROOT, "dist", "readme-blocks", `${name}-${process.pid}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Writes the block as an ES module (`.mts`, for the type check) and its JavaScript (`.mjs`, to run). */
export function writeScript(b: ReadmeBlock, dir: string): { source: string; script: string } {
  const base = path.join(dir, `readme-${b.line}`);
  fs.writeFileSync(`${base}.mts`, b.code);
  const js = ts.transpileModule(b.code, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 }, fileName: `${base}.mts` });
  fs.writeFileSync(`${base}.mjs`, js.outputText);
  return { source: `${base}.mts`, script: `${base}.mjs` };
}

/** tsc's errors for the given block files, as a user's strict ES-module project would see them. */
export function typeErrors(files: string[]): string[] {
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    target: ts.ScriptTarget.ES2022,
    lib: ["lib.es2022.d.ts"],
    types: ["node"],
    typeRoots: [path.join(ROOT, "node_modules", "@types")],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const block = d.file ? /readme-(\d+)\.mts$/.exec(d.file.fileName) : null;
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    const where = block ? `README.md:${Number(block[1]) + at}: ` : d.file ? `${d.file.fileName}:${at}: ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}
