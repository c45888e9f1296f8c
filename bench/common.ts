import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bestBlasCore, blasCoreFor, chooseBlasCore } from "../sdk/backends/native/blas-core";
import type { Json } from "./json";
import { regressions, type Watch } from "./regressions";
import { RESULTS_ROOT } from "./results-root";

/** Shared by every benchmark: child processes, the PyTorch peer, medians and result files. */

export const ROOT = path.join(__dirname, "..", "..");
export const QUICK = process.argv.includes("--quick");
/** --quick (a smoke run, used by the tests) writes beside the real results, never over them. */
export const RESULTS = path.join(RESULTS_ROOT, ...(QUICK ? ["quick"] : []));
export const PEERS = path.join(ROOT, "bench", "peers");
/** Debian's python: a different python3 may come first on PATH. */
export const PYTHON = fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

/** Where each BLAS lives when loaded by path (LD_LIBRARY_PATH), without changing the system. */
export const BLAS = {
  openblas: "/usr/lib/x86_64-linux-gnu/openblas-pthread",
  reference: "/usr/lib/x86_64-linux-gnu/blas",
} as const;

/**
 * One thread everywhere unless a benchmark says otherwise: comparisons are per core. A peer on
 * OpenBLAS gets the core type meshtrain's own kernels ask OpenBLAS for, so both sides run the
 * same BLAS kernels (where a VM hides its CPU model OpenBLAS would otherwise fall back to SSE3).
 */
export function pinnedEnv(threads = 1, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const t = String(threads);
  const env: NodeJS.ProcessEnv = { ...process.env };
  chooseBlasCore(env);
  return { ...env, OMP_NUM_THREADS: t, OPENBLAS_NUM_THREADS: t, MKL_NUM_THREADS: t, ...extra };
}

/**
 * glibc's allocator told to keep what a process frees (the seed article's "allocator tuning"),
 * for both sides of a one-worker comparison. PyTorch frees a step's activations to the system
 * and faults them back in the next step; on this project's VM that cost its step 1.6-3x on the
 * zoo's models (ResNet-20 198 against 420 samples/s), while meshtrain plans its arrays once.
 * A fair peer is the tuned one, as anyone timing PyTorch on CPUs would run it.
 */
export const ALLOCATOR_KEPT: Readonly<NodeJS.ProcessEnv> = {
  // 32 MiB, glibc's largest: blocks below it come from the heap, kept between steps.
  MALLOC_MMAP_THRESHOLD_: String(32 * 2 ** 20),
  MALLOC_TRIM_THRESHOLD_: String(4 * 2 ** 30),
  MALLOC_TOP_PAD_: String(512 * 2 ** 20),
};

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const v = [...values].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

/** Why the PyTorch peer cannot run here, or null when it can. */
export function torchMissing(): string | null {
  const r = spawnSync(PYTHON, ["-c", "import torch, torch.distributed; print(torch.__version__)"], { encoding: "utf8" });
  return r.status === 0 ? null : `PyTorch is not importable by ${PYTHON} (apt-get install python3-torch)`;
}

export function blasMissing(which: keyof typeof BLAS): string | null {
  return fs.existsSync(path.join(BLAS[which], "libblas.so.3")) ? null : `${BLAS[which]}/libblas.so.3 is missing (apt-get install ${which === "openblas" ? "libopenblas0-pthread" : "libblas3"})`;
}

export type { Json } from "./json";

/** Runs one program and returns every JSON line it printed; rejects with its output on failure. */
export function runJson(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 600_000): Promise<Json[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      const lines = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Json);
      if (code === 0) resolve(lines);
      else reject(new Error(`${path.basename(args[0] ?? cmd)} ${args.slice(1).join(" ")} failed (${signal ?? code}):\n${err.slice(-2000)}`));
    });
  });
}

/** Runs the ranks of one collective job together; resolves with every rank's JSON lines. */
export async function runRanks(n: number, make: (rank: number) => [string, string[], NodeJS.ProcessEnv]): Promise<Json[]> {
  const all = await Promise.all(Array.from({ length: n }, (_, r) => runJson(...make(r))));
  return all.flat();
}

/**
 * Below Linux's ephemeral range (32768-60999), where outgoing connections take their local
 * ports: a listener there could find its port taken (gloo's rendezvous failed so, once).
 */
let port = 20000 + (process.pid % 400) * 25;
/** A fresh block of ports for one job, so jobs never collide with a previous one's TIME_WAIT. */
export function ports(count: number): number {
  const p = port;
  port += count + 10;
  return p;
}

/** The widest vector instructions every core has, by the core type OpenBLAS is given for them. */
function vectorIsa(): string {
  let cpuinfo = "";
  try {
    cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return "?";
  }
  return { SkylakeX: "AVX-512", Haswell: "AVX2", Sandybridge: "AVX" }[blasCoreFor(cpuinfo) ?? ""] ?? "no AVX";
}

/** The CPU as every ratio names it: model, vector instructions and cores ("AMD EPYC (AVX-512), 2 cores"). */
export function cpuName(): string {
  return `${os.cpus()[0]?.model ?? "?"} (${vectorIsa()}), ${os.availableParallelism()} cores`;
}

export function machine(): Json {
  return {
    cpu: os.cpus()[0]?.model ?? "?",
    isa: vectorIsa(),
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    blas: blasCores(),
    date: new Date().toISOString(),
  };
}

/** The OpenBLAS core type the benches' children run (pinnedEnv's), and the one this CPU could take. */
function blasCores(): { core: string | null; best: string | null } {
  return { core: pinnedEnv().OPENBLAS_CORETYPE ?? null, best: bestBlasCore() };
}

/**
 * Writes bench/results/<name>.json and <name>.md. With `watch`, first holds data.rows against the
 * rows recorded there by the last full run on the same kind of CPU, and says (on stderr and in
 * the markdown) which measures fell more than 15%.
 */
export function writeResults(name: string, data: Json, markdown: string, watch?: Watch): void {
  fs.mkdirSync(RESULTS, { recursive: true });
  if (watch && !QUICK) {
    const said = regressions(path.join(RESULTS, `${name}.json`), { machine: data.machine as Json, rows: (data.rows as Json[] | undefined) ?? [] }, watch);
    for (const line of said) process.stderr.write(`bench ${name}: ${line}\n`);
    if (said.length > 0) markdown = `${markdown.trim()}\n\n${said.join("\n")}`;
  }
  fs.writeFileSync(path.join(RESULTS, `${name}.json`), `${JSON.stringify(data, null, 2)}\n`);
  fs.writeFileSync(path.join(RESULTS, `${name}.md`), `${markdown.trim()}\n`);
  process.stdout.write(`\n${markdown.trim()}\n\nwrote ${path.relative(process.cwd(), path.join(RESULTS, name))}.json and .md\n`);
}

export function fmt(x: number, digits = 2): string {
  return Number.isFinite(x) ? x.toFixed(digits) : "-";
}
