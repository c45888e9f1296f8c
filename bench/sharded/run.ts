import * as path from "node:path";
import { BLAS, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, runJson, runRanks, torchMissing, writeResults, type Json } from "../common";

/**
 * Sharded data parallelism on this machine, Adam, 64 samples per worker per step, each worker
 * holding its own data, over loopback: meshtrain's plain data parallelism, ZeRO-1 (shard
 * "optimizer"), ZeRO-2 and ZeRO-3 (shard "gradients", "parameters"; each in its default buckets
 * and a layer a bucket) beside PyTorch DDP, DDP with
 * ZeroRedundancyOptimizer (ZeRO-1) and FSDP (ZeRO-3) on gloo, in the same run, rounds
 * interleaved: samples/s and each worker's memory (the resident set without a model, and the
 * kernel's high-water mark during training, both sides measured alike), medians of rounds. Two
 * models of about 11M parameters: the 11.4M MLP, whose middle layer is 79% of it, and an MLP of
 * eight 1200-wide layers, none of them more than 13%.
 */

const ROUNDS = QUICK ? 1 : 3;
const BATCH = 64;
const STEPS = QUICK ? 3 : 20;
const WORLDS = QUICK ? [2] : [2, 4];
/** --quick (the smoke test) trains the demo's small MLP: it checks the benchmark runs, not how fast. */
const MODELS = QUICK ? (["mlp"] as const) : (["mlp10m", "mlpdeep"] as const);
type Model = (typeof MODELS)[number];
const MODEL_NAMES: Record<Model, string> = { mlp10m: "MLP 11.4M (784-3000-3000-10)", mlpdeep: "MLP 11.0M (784-1200x8-10)", mlp: "MLP 0.27M (784-256-256-10)" };
const MiB = 2 ** 20;

type Variant = "meshtrain/none" | "meshtrain/optimizer" | "meshtrain/gradients" | "meshtrain/gradients-per-layer" | "meshtrain/parameters" | "meshtrain/parameters-per-layer" | "torch/ddp" | "torch/zero" | "torch/fsdp";
const VARIANTS: readonly Variant[] = ["meshtrain/none", "meshtrain/optimizer", "meshtrain/gradients", "meshtrain/gradients-per-layer", "meshtrain/parameters", "meshtrain/parameters-per-layer", "torch/ddp", "torch/zero", "torch/fsdp"];
const NAMES: Record<Variant, string> = {
  "meshtrain/none": "meshtrain data",
  "meshtrain/optimizer": "meshtrain ZeRO-1 (shard \"optimizer\")",
  "meshtrain/gradients": "meshtrain ZeRO-2 (shard \"gradients\"; buckets of 25 MiB, the default)",
  "meshtrain/gradients-per-layer": "meshtrain ZeRO-2, a layer a bucket (bucketMB 0)",
  "meshtrain/parameters": "meshtrain ZeRO-3 (shard \"parameters\"; buckets of 12 MiB, the default)",
  "meshtrain/parameters-per-layer": "meshtrain ZeRO-3, a layer a bucket (bucketMB 0)",
  "torch/ddp": "PyTorch DDP",
  "torch/zero": "PyTorch DDP + ZeroRedundancyOptimizer (ZeRO-1)",
  "torch/fsdp": "PyTorch FSDP (ZeRO-3)",
};
/**
 * --quick (the smoke test) runs each script and stage once: a layer a bucket is the same script
 * with BUCKET_MB=0, and FSDP the same peer script as ZeroRedundancyOptimizer.
 */
const RUN_VARIANTS: readonly Variant[] = QUICK ? VARIANTS.filter((v) => !v.endsWith("-per-layer") && v !== "torch/fsdp") : VARIANTS;
/** Each meshtrain variant's PyTorch peer. */
const PEER: Partial<Record<Variant, Variant>> = { "meshtrain/none": "torch/ddp", "meshtrain/optimizer": "torch/zero", "meshtrain/parameters": "torch/fsdp" };

interface Measured {
  rate: number;
  /** Per worker: bytes above its resident set without a model, and its peak resident set. */
  grew: number[];
  peak: number[];
  estimate: number | null;
  /** meshtrain, per worker: the bytes of the dataset it loaded itself, and the peak predicted (the process's own, the plan's estimate and that data). */
  data?: number[];
  predicted?: number[];
  error?: string;
}

async function meshtrain(model: Model, shard: string, n: number): Promise<Measured> {
  const perLayer = shard.endsWith("-per-layer");
  const [m] = await runJson(process.execPath, [path.join(__dirname, "meshtrain-sharded.js"), String(n), String(BATCH), String(STEPS), model], pinnedEnv(undefined, { SHARD: shard.replace(/-per-layer$/, ""), ...(perLayer ? { BUCKET_MB: "0" } : {}) }));
  const mem = m!.memory as Array<{ own: number; peak: number; data: number }>;
  const estimate = m!.estimate_bytes as number;
  // A process can hold less at its peak than when it joined (what its start left is given back since): no growth, not less.
  return { rate: m!.samples_per_second as number, grew: mem.map((w) => Math.max(0, w.peak - w.own)), peak: mem.map((w) => w.peak), estimate, data: mem.map((w) => w.data), predicted: mem.map((w) => w.own + estimate + w.data) };
}

async function torch(model: Model, mode: string, n: number): Promise<Measured> {
  const port = ports(1);
  const lines = await runRanks(n, (r) => [
    PYTHON,
    [path.join(PEERS, "torch_zero.py"), "--rank", String(r), "--world", String(n), "--port", String(port), "--mode", mode, "--model", model, "--batch", String(BATCH), "--steps", String(STEPS)],
    pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas, PYTHONPATH: PEERS }),
  ]);
  const error = lines.find((l) => typeof l.error === "string")?.error as string | undefined;
  if (error) return { rate: NaN, grew: [], peak: [], estimate: null, error };
  const ranks = lines.filter((l) => typeof l.peak_rss_bytes === "number").sort((a, b) => (a.rank as number) - (b.rank as number));
  return { rate: lines.find((l) => typeof l.samples_per_second === "number")!.samples_per_second as number, grew: ranks.map((l) => Math.max(0, (l.peak_rss_bytes as number) - (l.idle_rss_bytes as number))), peak: ranks.map((l) => l.peak_rss_bytes as number), estimate: null };
}

function measure(model: Model, v: Variant, n: number): Promise<Measured> {
  const [side, how] = v.split("/") as [string, string];
  return side === "meshtrain" ? meshtrain(model, how, n) : torch(model, how, n);
}

/** Per worker the median over rounds, shown as the range over workers. */
function span(ms: readonly Measured[], n: number, pick: (m: Measured) => number[]): { values: number[]; text: string } {
  const values = Array.from({ length: n }, (_, w) => median(ms.map((m) => pick(m)[w] ?? NaN)));
  return { values, text: values.some((x) => !Number.isFinite(x)) ? "-" : `${fmt(Math.min(...values) / MiB, 0)}-${fmt(Math.max(...values) / MiB, 0)}` };
}

function tableRows(runs: Record<string, Measured[]>, rows: Json[]): string[] {
  const table = ["| model | workers | run | samples/s | / meshtrain data | / its PyTorch peer | peak resident set per worker (MiB) | above the worker without a model (MiB) | plan's estimate + the data it loaded (MiB) | peak / predicted peak |", "|---|---|---|---|---|---|---|---|---|---|"];
  for (const model of MODELS) {
    for (const n of WORLDS) {
      const rate = (v: Variant): number => median((runs[`${model}/${v}/${n}`] ?? []).map((m) => m.rate));
      for (const v of VARIANTS) {
        const ms = runs[`${model}/${v}/${n}`] ?? [];
        if (ms.length === 0) continue;
        const error = ms.find((m) => m.error)?.error;
        const r = rate(v);
        const peerRate = PEER[v] ? rate(PEER[v]!) : NaN;
        const peak = span(ms, n, (m) => m.peak);
        const grew = span(ms, n, (m) => m.grew);
        const estimate = ms[0]!.estimate;
        const data = ms[0]!.data?.[0] ?? 0;
        // Per worker, the median over rounds of its peak over the peak predicted for it.
        const ratio = ms[0]!.predicted ? Array.from({ length: n }, (_, w) => median(ms.map((m) => m.peak[w]! / m.predicted![w]!))) : null;
        const ratioText = ratio ? `${fmt(Math.min(...ratio))}-${fmt(Math.max(...ratio))}` : "-";
        rows.push({ model, workers: n, variant: v, samplesPerSecond: r, ratioToData: r / rate("meshtrain/none"), ratioToPeer: Number.isFinite(peerRate) ? r / peerRate : null, peakBytes: peak.values, grewBytes: grew.values, estimateBytes: estimate, dataBytes: ms[0]!.data ?? null, peakOverPredicted: ratio, error: error ?? null, runs: ms.map((m) => m.rate) });
        const lead = `| ${MODEL_NAMES[model]} | ${n} | ${NAMES[v]} |`;
        table.push(error ? `${lead} did not run: \`${error.replace(/\|/g, "/")}\` | | | | | | |` : `${lead} ${fmt(r, 0)} | ${fmt(r / rate("meshtrain/none"))} | ${Number.isFinite(peerRate) ? fmt(r / peerRate) : "-"} | ${peak.text} | ${grew.text} | ${estimate ? `${fmt(estimate / MiB, 0)} + ${fmt(data / MiB, 0)}` : "-"} | ${ratioText} |`);
      }
    }
  }
  return table;
}

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const runs: Record<string, Measured[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const model of MODELS) {
      for (const n of WORLDS) {
        for (const v of RUN_VARIANTS) {
          if (torchGone && v.startsWith("torch")) continue;
          (runs[`${model}/${v}/${n}`] ??= []).push(await measure(model, v, n));
          process.stderr.write(`round ${round + 1}/${ROUNDS}: ${model}, ${v} on ${n} workers done\n`);
        }
      }
    }
  }
  const rows: Json[] = [];
  const md = [
    `### Sharded data parallelism: Adam, ${BATCH} samples per worker per step, over loopback (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...tableRows(runs, rows),
    "",
    ...(torchGone ? [`PyTorch: not measured: ${torchGone}.`] : []),
    "Memory, both sides measured alike: each worker's resident set with no model (after garbage collections in every thread; meshtrain also gives malloc's free memory back first), and the kernel's high-water mark from the model being in place through the last step (reset through /proc/self/clear_refs; meshtrain reports loading's peak apart). The plan's estimate counts the weights, the gradient, the optimizer state and the activations as each stage shards them (ZeRO-2: its largest bucket's gradient whole; ZeRO-3: its largest bucket's weights and gradient whole); each worker here loads the dataset itself (feed \"workers\") and reports its bytes. The predicted peak is the worker's resident set without a model, measured in the same fit, with V8's young generation as the fit had it (V8 sizes it as it sees fit, by up to 30 MiB, so it is counted at its size after the fit's steps), plus the estimate (which counts 2.4 MiB for what any fit grows the runtime by: compiled code, the model's objects) and the data; what else a fit adds to a process (the data plane's buffers, the communication thread's heap) is in none, so the measured peak runs above it.",
    "All workers share this machine's cores, unpinned; the torch ranks use one thread each, on the same OpenBLAS core type as meshtrain's kernels. Each meshtrain row's PyTorch peer: DDP for data, DDP with ZeroRedundancyOptimizer for ZeRO-1, FSDP for ZeRO-3 (ZeRO-2 has none on gloo but FSDP's SHARD_GRAD_OP, which does not import either).",
    "Command: `npm run bench:sharded`.",
  ].join("\n");
  writeResults("sharded", { machine: machine(), quick: QUICK, rows }, md, { key: (r) => `${String(r.model)}, ${String(r.workers)} workers, ${String(r.variant)}`, measures: ["samplesPerSecond"], include: (r) => String(r.variant).startsWith("meshtrain") });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
