import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";

/**
 * The code blocks of the README and the guides in docs/, and how the tests run each one as
 * written. A block the table does not place fails the unit test, so a new block gets run (or a
 * reason) when it is added.
 */

export const ROOT = path.join(__dirname, "..", "..", "..");

/** The pages whose code is tested: the front page and every guide. */
export function documents(): string[] {
  return ["README.md", ...fs.readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
}

export interface ReadmeBlock {
  /** The page it is on, e.g. "README.md" or "docs/strategies.md". */
  file: string;
  lang: string;
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
}

/** Where a block is, for messages: "docs/faults.md:12". */
export function where(b: ReadmeBlock): string {
  return `${b.file}:${b.line}`;
}

/** The text of one page (the README by default). */
export function readmeText(file = "README.md"): string {
  return fs.readFileSync(path.join(ROOT, file), "utf8");
}

/** Every page's text, joined: for paragraphs that may sit in any guide. */
export function allDocsText(): string {
  return documents().map((f) => readmeText(f)).join("\n\n");
}

export function readmeBlocks(files = documents()): ReadmeBlock[] {
  const blocks: ReadmeBlock[] = [];
  for (const file of files) {
    const lines = readmeText(file).split("\n");
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(\w*)\s*$/.exec(lines[i]!);
      if (!open) continue;
      const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
      if (end < 0) throw new Error(`${file}:${i + 1}: a code fence that is never closed`);
      blocks.push({ file, lang: open[1]!, line: i + 1, code: lines.slice(i + 1, end).join("\n") + "\n" });
      i = end;
    }
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
  { contains: "apt-get install jupyter-notebook", run: { notRun: "installs a Debian package and serves Jupyter until stopped; notebooks.test.ts and notebooks-rest.test.ts run every notebook on the kernelspec they find through the same JUPYTER_PATH" } },
  { contains: "npm install /path/to/meshtrain", run: "tarball" },
  { contains: "npx meshtrain worker --host 0.0.0.0 --port 7070\n", run: "hosts" },
  { contains: 'connect(["ws://10.0.0.2:7070"', run: "hosts" },
  { contains: "--tls-cert cert.pem --tls-key key.pem", run: "hosts" },
  { contains: '.connect(["wss://10.0.0.2:7070"', run: "hosts" },
  { contains: 'cluster().join({ workers: 2, host: "0.0.0.0" })', run: { notRun: "waits for workers started on other hosts; join.test.ts makes the same join() with real `meshtrain worker --join` processes" } },
  { contains: "npx meshtrain worker --join ws://driver-host:7071", run: { notRun: "needs a driver named driver-host; join.test.ts runs `meshtrain worker --join` against a real driver" } },
  { contains: "TimeoutError: 1 of 2 workers joined", run: "output" },
  { contains: "// train.ts, run on every node", run: { notRun: "runs on every node of a job; from-env.test.ts and slurm.test.ts run such a script under torchrun's variables and srun" } },
  { contains: "srun -N4 -n4 node train.js", run: { notRun: "needs a Slurm cluster of 4 nodes; slurm.test.ts runs srun on a real slurmctld with two slurmd nodes" } },
  { contains: "ConfigError: fromEnv(): no rank in the environment", run: "output" },
  { contains: 'cluster().ssh(["node1", "alice@node2:2222"]', run: { notRun: "needs hosts named node1 and node2; ssh.test.ts runs ssh() on network-namespace hosts each with a real sshd" } },
  { contains: "LaunchError: ssh preflight failed", run: "output" },
  { contains: 'cluster().slurm({ nodes: 4', run: { notRun: "needs a Slurm partition named gpu; slurm.test.ts submits to a real slurmctld" } },
  { contains: "LaunchError: sbatch refused the job", run: "output" },
  { contains: "npx meshtrain k8s --workers 4", run: { notRun: "no Kubernetes cluster runs here; k8s.test.ts validates the manifests `meshtrain k8s` writes and runs their pods' command lines" } },
  { contains: "FROM node:20-bookworm-slim", run: { notRun: "no Docker engine runs on these machines" } },
  { contains: 'meshtrain: --name "Mnist_Run"', run: "output" },
  { contains: "meshtrain worker: could not join ws://mnist-driver:7071", run: "output" },
  { contains: "npx meshtrain bundle --list", run: { notRun: "copies the bundle to another host; worker-bundle.test.ts makes it with `meshtrain bundle --list`, extracts it in an empty folder and runs `node meshtrain-worker.js` there" } },
  { contains: "npx meshtrain devices", run: { notRun: "webgpu-workers.test.ts runs `meshtrain devices` and checks what it lists" } },
  { contains: "Vulkan loader: /usr/lib/chromium/libvulkan.so.1", run: "output" },
  { contains: 'cluster().gpus(2, { software: true }).strategy("data").launch()', run: "script" },
  { contains: "join({ workers: 3, port: 7071, browsers: true", run: { notRun: "waits for browser tabs to open the invite link; browser-workers.test.ts makes the same join() and opens headless Chromium tabs at the link" } },
  { contains: "MESHTRAIN_PAGE_MODULES=./my-layers.js", run: { notRun: "needs the user's layers module; browser-workers.test.ts builds a page with test/helpers/custom-layers.js this way and trains a model of that layer through it" } },
  { contains: "layers.positionEmbedding({ sequenceLength: 64 })", run: "script" },
  { contains: "slow step: rank 0's slice computed in", run: "output" },
  { contains: "npm run bench ", run: { notRun: "runs for about 20 minutes on 2 cores and measures, never asserts, times; bench-smoke.test.ts, bench-smoke-compression.test.ts and bench-network.test.ts run every benchmark end to end with --quick" } },
];

/** The table's entry for a block; throws unless exactly one entry matches it. */
export function blockRun(b: ReadmeBlock): BlockRun {
  const hits = BLOCK_RUNS.filter((e) => b.code.includes(e.contains));
  if (hits.length !== 1) throw new Error(`${where(b)}: ${hits.length} entries of BLOCK_RUNS match this ${b.lang || "untyped"} block; give it exactly one`);
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
  const base = path.join(dir, `${b.file.replace(/[/.]/g, "-")}-${b.line}`);
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
    const block = d.file ? /([\w-]+)-md-(\d+)\.mts$/.exec(d.file.fileName) : null;
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    const place = block ? `${block[1]!.replace(/^docs-/, "docs/")}.md:${Number(block[2]) + at}: ` : d.file ? `${d.file.fileName}:${at}: ` : "";
    return place + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}
