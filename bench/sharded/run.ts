import * as path from "node:path";
import { BLAS, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, runJson, runRanks, torchMissing, writeResults, type Json } from "../common";

/**
 * Sharded data parallelism on this machine: the 11.4M MLP (784-3000-3000-10) with Adam, 64
 * samples per worker per step, each worker holding its own data, over loopback. meshtrain's plain
 * data parallelism and ZeRO-1 (strategy("data", { shard: "optimizer" })) beside PyTorch DDP, DDP
 * with ZeroRedundancyOptimizer (ZeRO-1) and FSDP (ZeRO-3) on gloo, in the same run, rounds
 * interleaved: samples/s and each worker's memory (the resident set without a model, and the
 * kernel's high-water mark during the fit, both sides measured the same way), medians of rounds.
 */

const ROUNDS = QUICK ? 1 : 3;
const BATCH = 64;
const STEPS = QUICK ? 3 : 20;
const WORLDS = QUICK ? [2] : [2, 4];
const MiB = 2 ** 20;

type Variant = "meshtrain/none" | "meshtrain/optimizer" | "torch/ddp" | "torch/zero" | "torch/fsdp";
const VARIANTS: readonly Variant[] = ["meshtrain/none", "meshtrain/optimizer", "torch/ddp", "torch/zero", "torch/fsdp"];
const NAMES: Record<Variant, string> = {
  "meshtrain/none": "meshtrain data",
  "meshtrain/optimizer": "meshtrain ZeRO-1 (shard \"optimizer\")",
  "torch/ddp": "PyTorch DDP",
  "torch/zero": "PyTorch DDP + ZeroRedundancyOptimizer (ZeRO-1)",
  "torch/fsdp": "PyTorch FSDP (ZeRO-3)",
};

interface Measured {
  rate: number;
  /** Per worker: bytes above its resident set without a model, and its peak resident set. */
  grew: number[];
  peak: number[];
  estimate: number | null;
  error?: string;
}

async function meshtrain(shard: "none" | "optimizer", n: number): Promise<Measured> {
  const [m] = await runJson(process.execPath, [path.join(__dirname, "meshtrain-sharded.js"), String(n), String(BATCH), String(STEPS)], pinnedEnv(undefined, { SHARD: shard }));
  const mem = m!.memory as Array<{ idle: number; peak: number }>;
  return { rate: m!.samples_per_second as number, grew: mem.map((w) => w.peak - w.idle), peak: mem.map((w) => w.peak), estimate: m!.estimate_bytes as number };
}

async function torch(mode: "ddp" | "zero" | "fsdp", n: number): Promise<Measured> {
  const port = ports(1);
  const lines = await runRanks(n, (r) => [
    PYTHON,
    [path.join(PEERS, "torch_zero.py"), "--rank", String(r), "--world", String(n), "--port", String(port), "--mode", mode, "--batch", String(BATCH), "--steps", String(STEPS)],
    pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas, PYTHONPATH: PEERS }),
  ]);
  const error = lines.find((l) => typeof l.error === "string")?.error as string | undefined;
  if (error) return { rate: NaN, grew: [], peak: [], estimate: null, error };
  const ranks = lines.filter((l) => typeof l.peak_rss_bytes === "number").sort((a, b) => (a.rank as number) - (b.rank as number));
  return { rate: lines.find((l) => typeof l.samples_per_second === "number")!.samples_per_second as number, grew: ranks.map((l) => (l.peak_rss_bytes as number) - (l.idle_rss_bytes as number)), peak: ranks.map((l) => l.peak_rss_bytes as number), estimate: null };
}

function measure(v: Variant, n: number): Promise<Measured> {
  const [side, how] = v.split("/") as [string, string];
  return side === "meshtrain" ? meshtrain(how as "none" | "optimizer", n) : torch(how as "ddp" | "zero" | "fsdp", n);
}

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const runs: Record<string, Measured[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of WORLDS) {
      for (const v of VARIANTS) {
        if (torchGone && v.startsWith("torch")) continue;
        (runs[`${v}/${n}`] ??= []).push(await measure(v, n));
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${v} on ${n} workers done\n`);
      }
    }
  }
  const rows: Json[] = [];
  const table = ["| workers | run | samples/s | / meshtrain data | / its PyTorch peer | peak resident set per worker (MiB) | above the worker without a model (MiB) | plan's estimate (MiB) |", "|---|---|---|---|---|---|---|---|"];
  for (const n of WORLDS) {
    const rate = (v: Variant): number => median((runs[`${v}/${n}`] ?? []).map((m) => m.rate));
    for (const v of VARIANTS) {
      const ms = runs[`${v}/${n}`] ?? [];
      if (ms.length === 0) continue;
      const error = ms.find((m) => m.error)?.error;
      const r = rate(v);
      const peer = v === "meshtrain/none" ? rate("torch/ddp") : v === "meshtrain/optimizer" ? rate("torch/zero") : NaN;
      // Per worker, the median over rounds; shown as the range over workers.
      const perWorker = (pick: (m: Measured) => number[]): number[] => Array.from({ length: n }, (_, w) => median(ms.map((m) => pick(m)[w] ?? NaN)));
      const peak = perWorker((m) => m.peak);
      const grew = perWorker((m) => m.grew);
      const span = (xs: number[]): string => (xs.some((x) => !Number.isFinite(x)) ? "-" : `${fmt(Math.min(...xs) / MiB, 0)}-${fmt(Math.max(...xs) / MiB, 0)}`);
      const estimate = ms[0]!.estimate;
      rows.push({ workers: n, variant: v, samplesPerSecond: r, ratioToData: r / rate("meshtrain/none"), ratioToPeer: peer ? r / peer : null, peakBytes: peak, grewBytes: grew, estimateBytes: estimate, error: error ?? null, runs: ms.map((m) => m.rate) });
      table.push(error ? `| ${n} | ${NAMES[v]} | did not run: \`${error.replace(/\|/g, "/")}\` | | | | | |` : `| ${n} | ${NAMES[v]} | ${fmt(r, 0)} | ${fmt(r / rate("meshtrain/none"))} | ${Number.isFinite(peer) ? fmt(r / peer) : "-"} | ${span(peak)} | ${span(grew)} | ${estimate ? fmt(estimate / MiB, 0) : "-"} |`);
    }
  }
  const md = [
    `### Sharded data parallelism: the 11.4M MLP with Adam, ${BATCH} samples per worker per step, over loopback (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...table,
    "",
    ...(torchGone ? [`PyTorch: not measured: ${torchGone}.`] : []),
    "Memory, both sides measured alike: each worker's resident set with no model (after a garbage collection), and the kernel's high-water mark from the model being in place through the last step (reset through /proc/self/clear_refs; meshtrain reports loading's peak apart). The plan's estimate counts the weights, the gradient, the optimizer state (divided by the workers under ZeRO-1) and the activations; it does not count the step's buffer or the data plane's, so measured growth runs above it.",
    "All workers share this machine's cores, unpinned; the torch ranks use one thread each, on the same OpenBLAS core type as meshtrain's kernels. The torch peer of meshtrain's data parallelism is DDP, of its ZeRO-1 DDP with ZeroRedundancyOptimizer. ZeRO-2 and ZeRO-3 are not built in meshtrain yet.",
    "Command: `npm run bench:sharded`.",
  ].join("\n");
  writeResults("sharded", { machine: machine(), quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
