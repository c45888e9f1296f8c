import * as path from "node:path";
import { discoverAdapters } from "../../sdk/backends/webgpu/discover";
import { vulkanEnv } from "../../sdk/backends/webgpu/vulkan";
import { loadAddon } from "../../sdk/backends/native/addon";
import { BLAS, cpuName, fmt, machine, median, PEERS, pinnedEnv, PYTHON, QUICK, runJson, torchMissing, writeResults, type Json } from "../common";
import { ZOO_MODELS, type ZooModel } from "./models";

/**
 * bench:zoo: the models people train, one worker's replica step against one PyTorch 1.13
 * process, one thread each, the same architectures, batch and optimizer, interleaved rounds,
 * medians. Each meshtrain row says whether the native step ran (or which layer kept autodiff),
 * the kernels TF.js dispatched in a step, and the worker's peak memory beside the plan's
 * estimate. The autodiff rows (MESHTRAIN_NATIVE_STEP=0) are what these models ran at before the
 * native step computed them; the webgpu rows ran on whatever adapter this machine has.
 */

const ROUNDS = QUICK ? 1 : 3;
/** What a vCPU-hour costs in the seed article's table ($0.357 an hour for 8 vCPUs), for samples per dollar at one thread. */
const VCPU_HOUR = 0.357 / 8;

interface Case {
  model: ZooModel;
  batch: number;
  optimizer: "sgd" | "adam";
  steps: number;
  warmup: number;
}

interface Side {
  label: string;
  run(c: Case): Promise<Json>;
  skip?: (c: Case) => string | null;
}

function meshtrain(label: string, backend: string, env: NodeJS.ProcessEnv = {}): Side {
  return { label, run: async (c) => (await runJson(process.execPath, ["--expose-gc", path.join(__dirname, "tfjs-zoo.js"), c.model, backend, String(c.batch), String(c.steps), String(c.warmup), c.optimizer], pinnedEnv(1, env), 3_600_000))[0]! };
}

function torch(): Side {
  return { label: "PyTorch", run: async (c) => (await runJson(PYTHON, [path.join(PEERS, "torch_zoo.py"), "--model", c.model, "--batch", String(c.batch), "--threads", "1", "--steps", String(c.steps), "--warmup", String(c.warmup), "--optimizer", c.optimizer], pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas }), 3_600_000))[0]! };
}

/** Steps a round measures: each takes seconds to minutes, whatever the model. */
const STEPS: Record<ZooModel, number> = { resnet20: 10, resnet50: 2, transformer: 8, gpt: 6, sentiment: 20, jena: 30, textgap: 60, mlpdrop: 60 };

function cases(): Case[] {
  const all: Case[] = [];
  for (const model of Object.keys(ZOO_MODELS) as ZooModel[]) {
    const batch = ZOO_MODELS[model].batch;
    const steps = QUICK ? 1 : STEPS[model];
    const warmup = QUICK ? 0 : model === "resnet50" ? 1 : 2;
    if (QUICK && model === "resnet50") continue;
    all.push({ model, batch, optimizer: "sgd", steps, warmup });
    if (!QUICK || model === "mlpdrop") all.push({ model, batch, optimizer: "adam", steps, warmup });
  }
  // The seed article's larger batch for ResNet-50.
  if (!QUICK) all.push({ model: "resnet50", batch: 128, optimizer: "sgd", steps: 1, warmup: 1 });
  return all;
}

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const native = loadAddon();
  const adapter = (await discoverAdapters().catch(() => ({ adapters: [] }))).adapters[0];
  const sides: Side[] = [
    { ...meshtrain("meshtrain native", "native"), skip: () => (native.ok ? null : native.reason) },
    { ...torch(), skip: () => torchGone },
    // What these models ran at by TF.js's autodiff (on the same native kernels): before the native step computed them.
    { ...meshtrain("meshtrain autodiff", "native", { MESHTRAIN_NATIVE_STEP: "0" }), skip: (c) => (!native.ok ? native.reason : c.optimizer !== "sgd" || c.model === "resnet50" || (QUICK && c.model !== "mlpdrop") ? "not run" : null) },
    { ...meshtrain("meshtrain webgpu", "webgpu", vulkanEnv(null)), skip: (c) => (!adapter ? "no WebGPU adapter" : c.optimizer !== "sgd" || ["resnet50", "gpt", "transformer"].includes(c.model) || QUICK ? "not run" : null) },
  ];
  const results = new Map<string, Json[]>();
  const key = (c: Case, s: Side): string => `${c.model}/${c.batch}/${c.optimizer}/${s.label}`;
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases()) {
      for (const s of sides) {
        if (s.skip?.(c)) continue;
        // The autodiff and webgpu rows are slow and only compare with each other and their own past: one round.
        if (round > 0 && (s.label.endsWith("autodiff") || s.label.endsWith("webgpu"))) continue;
        const slow = s.label.endsWith("autodiff") || s.label.endsWith("webgpu");
        let line: Json;
        try {
          line = await s.run(slow ? { ...c, steps: Math.max(1, Math.ceil(c.steps / 4)), warmup: Math.min(c.warmup, 1) } : c);
        } catch (err) {
          // One side failing leaves its cell empty, said on stderr; the others are still measured.
          process.stderr.write(`round ${round + 1}/${ROUNDS}: ${c.model} batch ${c.batch} ${c.optimizer} ${s.label} failed: ${(err as Error).message.split("\n").slice(0, 3).join(" | ")}\n`);
          continue;
        }
        (results.get(key(c, s)) ?? results.set(key(c, s), []).get(key(c, s))!).push(line);
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${c.model} batch ${c.batch} ${c.optimizer} ${s.label}: ${fmt(line.samples_per_second as number, 1)} samples/s\n`);
      }
    }
  }
  const rows: Json[] = [];
  const table = ["| model | batch | optimizer | meshtrain samples/s | PyTorch samples/s | meshtrain / PyTorch | step | before (autodiff) | webgpu (software) | peak memory: measured / plan's estimate (MiB) |", "|---|---|---|---|---|---|---|---|---|---|"];
  for (const c of cases()) {
    const got = (label: string): Json[] => results.get(key(c, sides.find((s) => s.label === label)!)) ?? [];
    const rate = (label: string): number => median(got(label).map((j) => j.samples_per_second as number));
    const mt = got("meshtrain native");
    const ours = rate("meshtrain native");
    const peer = rate("PyTorch");
    const first = mt[0];
    const auto = got("meshtrain autodiff")[0];
    const gpu = got("meshtrain webgpu")[0];
    const peak = median(mt.map((j) => j.peak_rss_above_mib as number));
    const estimate = first?.estimate_mib as number | undefined;
    rows.push({ ...c, meshtrain: ours, pytorch: peer, ratio: ours / peer, runs: mt.map((j) => j.samples_per_second), peerRuns: got("PyTorch").map((j) => j.samples_per_second), native: first?.native, why: first?.why, autodiff: auto?.samples_per_second ?? null, autodiffKernels: auto?.kernels_per_step ?? null, webgpu: gpu?.samples_per_second ?? null, webgpuKernels: gpu?.kernels_per_step ?? null, peakMiB: peak, estimateMiB: estimate ?? null, peerPeakMiB: median(got("PyTorch").map((j) => j.peak_rss_above_mib as number)), samplesPerDollar: (ours * 3600) / VCPU_HOUR, peerSamplesPerDollar: (peer * 3600) / VCPU_HOUR });
    const step = first ? (first.native ? "native" : `autodiff: ${String(first.why)}`) : "-";
    const before = auto ? `${fmt(auto.samples_per_second as number, 1)} (${String(auto.kernels_per_step)} kernels a step)` : "-";
    const webgpu = gpu ? `${fmt(gpu.samples_per_second as number, 1)} (${String(gpu.kernels_per_step)} kernels)` : "-";
    table.push(`| ${c.model} | ${c.batch} | ${c.optimizer} | ${fmt(ours, 1)} | ${fmt(peer, 1)} | ${fmt(ours / peer)} | ${step} | ${before} | ${webgpu} | ${fmt(peak, 0)} / ${estimate === undefined ? "-" : fmt(estimate, 0)} |`);
  }
  const m = machine();
  const md = [
    `### The models people train: one worker against one PyTorch process (medians of ${ROUNDS} interleaved rounds, one thread each)`,
    "",
    `Machine: ${cpuName()}. PyTorch 1.13 (Debian's: oneDNN for convolutions, OpenBLAS for the rest, given the same core type), meshtrain on its native backend (OpenBLAS); the same architectures, batch and optimizer (SGD lr 0.01, Adam lr 0.001), random inputs of each model's shape.`,
    "",
    ...table,
    "",
    ...Object.entries(ZOO_MODELS).map(([k, e]) => `- ${k}: ${e.what}.`),
    "",
    "step: how meshtrain's worker computed the step (native: the native step, no autodiff tape). before: the same model by TF.js's autodiff on the same native kernels (MESHTRAIN_NATIVE_STEP=0), one round, and the kernels TF.js dispatched in one step (the native step dispatches none). webgpu: the same by autodiff on the webgpu backend, one round;",
    adapter?.software ? `here the software adapter "${adapter.name}" (a CPU rasteriser): its figures compare only with each other; no real GPU has run this code.` : adapter ? `on "${adapter.name}".` : "no adapter here.",
    "Peak memory: the worker process's resident set during the steps, above what it held before the model arrived (the load message's buffers collected before the first step), against the plan's estimate (parameters, gradient, optimizer state, the native step's arrays). The estimate has no term for the JavaScript runtime's own growth in a first step (compiled code, heap), a few MiB that only the smallest models notice.",
    `Samples per dollar at one vCPU of the seed article's price ($${VCPU_HOUR.toFixed(4)} an hour): ResNet-50 at batch 16 and 128 sits beside its table (PyTorch 2.4, 8 vCPUs: 13.06 samples/s at batch 16, 9.12 at 128). In bench/results/zoo.json.`,
    "Command: `npm run bench:zoo`.",
  ].join("\n");
  writeResults("zoo", { machine: m, quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
