import * as fs from "node:fs";
import * as path from "node:path";
import { discoverAdapters } from "../../sdk/backends/webgpu/discover";
import { vulkanEnv } from "../../sdk/backends/webgpu/vulkan";
import { loadAddon } from "../../sdk/backends/native/addon";
import { ALLOCATOR_KEPT, BLAS, cpuName, fmt, machine, median, PEERS, pinnedEnv, PYTHON, QUICK, RESULTS, runJson, torchMissing, writeResults, type Json } from "../common";
import { renderZoo, VCPU_HOUR, zooRunOf, type ZooRow, type ZooRun } from "./render";
import { ZOO_MODELS, type ZooModel } from "./models";
import { resetKernelPeak } from "../../sdk/worker/memory-watch";

/**
 * bench:zoo: the models people train, one worker's replica step against one PyTorch 1.13
 * process, one thread each, the same architectures, batch and optimizer, interleaved rounds,
 * medians. Each meshtrain row says whether the native step ran (or which layer kept autodiff),
 * the kernels TF.js dispatched in a step, and the worker's peak memory beside the plan's
 * estimate. The autodiff rows (MESHTRAIN_NATIVE_STEP=0) are what these models ran at before the
 * native step computed them; the webgpu rows ran on whatever adapter this machine has.
 */

const ROUNDS = QUICK ? 1 : 3;

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

/** `kept`: glibc's allocator keeps what is freed (the speeds); false, its defaults, as a worker runs (`--memory`). */
function meshtrain(label: string, backend: string, env: NodeJS.ProcessEnv = {}, kept = true): Side {
  return { label, run: async (c) => (await runJson(process.execPath, ["--expose-gc", path.join(__dirname, "tfjs-zoo.js"), c.model, backend, String(c.batch), String(c.steps), String(c.warmup), c.optimizer], pinnedEnv(1, { ...(kept ? ALLOCATOR_KEPT : {}), ...env }), 3_600_000))[0]! };
}

function torch(kept = true): Side {
  return { label: "PyTorch", run: async (c) => (await runJson(PYTHON, [path.join(PEERS, "torch_zoo.py"), "--model", c.model, "--batch", String(c.batch), "--threads", "1", "--steps", String(c.steps), "--warmup", String(c.warmup), "--optimizer", c.optimizer], pinnedEnv(1, { ...(kept ? ALLOCATOR_KEPT : {}), LD_LIBRARY_PATH: BLAS.openblas }), 3_600_000))[0]! };
}

/** Steps a round measures: each takes seconds to minutes, whatever the model. */
const STEPS: Record<ZooModel, number> = { resnet20: 10, resnet50: 2, transformer: 8, gpt: 6, sentiment: 20, jena: 30, textgap: 300, mlpdrop: 300 };
/**
 * Steps each side takes before the timed ones. Models whose step is a millisecond or two get
 * more: over 60 steps after 2, PyTorch read 18-31k samples/s on the dropout MLP where it runs
 * 42-46k once warm (200 steps after 20), and the row read 1.5x where it is nearer 1.05x.
 */
const WARMUP: Record<ZooModel, number> = { resnet20: 2, resnet50: 1, transformer: 2, gpt: 2, sentiment: 5, jena: 5, textgap: 30, mlpdrop: 30 };
/** `--rows m1,m2`: only these models' rows measured again (native and PyTorch), merged into bench/results/zoo.json. */
const ONLY: ReadonlySet<string> | null = (() => {
  const i = process.argv.indexOf("--rows");
  return i >= 0 && process.argv[i + 1] ? new Set(process.argv[i + 1]!.split(",")) : null;
})();

function cases(): Case[] {
  const all: Case[] = [];
  for (const model of Object.keys(ZOO_MODELS) as ZooModel[]) {
    const batch = ZOO_MODELS[model].batch;
    if (ONLY && !ONLY.has(model)) continue;
    const steps = QUICK ? 1 : STEPS[model];
    const warmup = QUICK ? 0 : WARMUP[model];
    if (QUICK && model === "resnet50") continue;
    all.push({ model, batch, optimizer: "sgd", steps, warmup });
    if (!QUICK || model === "mlpdrop") all.push({ model, batch, optimizer: "adam", steps, warmup });
  }
  // The seed article's larger batch for ResNet-50.
  if (!QUICK && (!ONLY || ONLY.has("resnet50"))) all.push({ model: "resnet50", batch: 128, optimizer: "sgd", steps: 1, warmup: 1 });
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
        if (ONLY && (s.label.endsWith("autodiff") || s.label.endsWith("webgpu"))) continue;
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
  const rows: ZooRow[] = [];
  for (const c of cases()) {
    const got = (label: string): Json[] => results.get(key(c, sides.find((s) => s.label === label)!)) ?? [];
    const rate = (label: string): number => median(got(label).map((j) => j.samples_per_second as number));
    const mt = got("meshtrain native");
    const ours = rate("meshtrain native");
    const peer = rate("PyTorch");
    const first = mt[0];
    const auto = got("meshtrain autodiff")[0];
    const gpu = got("meshtrain webgpu")[0];
    rows.push({
      ...c, meshtrain: ours, pytorch: peer, ratio: ours / peer, native: first?.native as boolean | undefined, why: (first?.why as string | null | undefined) ?? null,
      autodiff: (auto?.samples_per_second as number | undefined) ?? null, autodiffKernels: (auto?.kernels_per_step as number | undefined) ?? null,
      webgpu: (gpu?.samples_per_second as number | undefined) ?? null, webgpuKernels: (gpu?.kernels_per_step as number | undefined) ?? null,
      peakMiB: median(mt.map((j) => j.peak_rss_above_mib as number)), estimateMiB: (first?.estimate_mib as number | undefined) ?? null,
      samplesPerDollar: (ours * 3600) / VCPU_HOUR, peerSamplesPerDollar: (peer * 3600) / VCPU_HOUR,
      ...{ runs: mt.map((j) => j.samples_per_second), peerRuns: got("PyTorch").map((j) => j.samples_per_second), peerPeakMiB: median(got("PyTorch").map((j) => j.peak_rss_above_mib as number)) },
    });
  }
  if (ONLY) return mergeRows(rows);
  const run: ZooRun = { rounds: ROUNDS, cpu: cpuName(), adapter: adapter ? { name: adapter.name, software: adapter.software } : null, memory: resetKernelPeak() ? "kernel" : "sampled", allocatorKept: true, blas: machine().blas as ZooRun["blas"], rows };
  writeResults("zoo", { machine: machine(), quick: QUICK, ...run }, renderZoo(run), ZOO_WATCH);
}

/** Each case's samples/s, held against the last full run's on the same kind of CPU. */
const ZOO_WATCH = { key: (r: Json) => `${String(r.model)}, batch ${String(r.batch)}, ${String(r.optimizer)}`, measures: ["meshtrain"] };

/** `--rows`: the rows measured again replace their speeds, runs and peaks in zoo.json; the autodiff and webgpu columns stay. */
async function mergeRows(rows: ZooRow[]): Promise<void> {
  const file = path.join(RESULTS, "zoo.json");
  const data = JSON.parse(fs.readFileSync(file, "utf8")) as Json;
  const kept = data.rows as ZooRow[];
  for (const r of rows) {
    const i = kept.findIndex((k) => k.model === r.model && k.batch === r.batch && k.optimizer === r.optimizer);
    const merged = { ...r, autodiff: kept[i]?.autodiff ?? null, autodiffKernels: kept[i]?.autodiffKernels ?? null, webgpu: kept[i]?.webgpu ?? null, webgpuKernels: kept[i]?.webgpuKernels ?? null };
    if (i >= 0) kept[i] = merged;
    else kept.push(merged);
  }
  data.remeasured = [...((data.remeasured as unknown[] | undefined) ?? []), { rows: [...ONLY!], date: new Date().toISOString() }];
  fs.writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  await render();
}

/** `--render`: the page again from bench/results/zoo.json (after a change to what it says), without measuring. */
async function render(): Promise<void> {
  const file = path.join(RESULTS, "zoo.json");
  const data = JSON.parse(fs.readFileSync(file, "utf8")) as Json;
  const adapter = (await discoverAdapters().catch(() => ({ adapters: [] }))).adapters[0];
  const rounds = Math.max(1, ...(data.rows as Array<{ runs?: unknown[] }>).map((r) => r.runs?.length ?? 1));
  const run = zooRunOf(data, { rounds, cpu: cpuName(), adapter: adapter ? { name: adapter.name, software: adapter.software } : null });
  writeResults("zoo", { ...data, rounds: run.rounds, cpu: run.cpu, adapter: run.adapter, memory: run.memory, allocatorKept: run.allocatorKept }, renderZoo(run));
}

/**
 * `--memory`: each case's peak memory measured again, over a round's warm-up and timed steps on each
 * side with glibc's allocator at its defaults, into bench/results/zoo.json's rows (the speeds stay). For a page whose speeds were
 * measured before peaks were read as the kernel's high-water mark; memory does not vary as
 * speed does from one run to the next.
 */
async function memory(): Promise<void> {
  if (!resetKernelPeak()) throw new Error("--memory needs the kernel's high-water mark (/proc/self/clear_refs): Linux only");
  const file = path.join(RESULTS, "zoo.json");
  const data = JSON.parse(fs.readFileSync(file, "utf8")) as Json;
  // At glibc's defaults, as a worker runs: kept, the allocator's held frees would count as the model's.
  const sides = [meshtrain("meshtrain native", "native", {}, false), torch(false)];
  for (const r of data.rows as Array<ZooRow & Json>) {
    // A round's steps after its warm-up ones: a fit's memory grows over its first hundreds of steps (compiled code, touched embedding rows).
    const model = r.model as ZooModel;
    const [steps, warmup] = r.batch === 128 ? [1, 1] : [STEPS[model], WARMUP[model]];
    const c: Case = { model, batch: r.batch, optimizer: r.optimizer as Case["optimizer"], steps, warmup };
    const [ours, peer] = [await sides[0]!.run(c), await sides[1]!.run(c)];
    r.peakMiB = ours.peak_rss_above_mib as number;
    r.estimateMiB = ours.estimate_mib as number;
    r.peerPeakMiB = peer.peak_rss_above_mib as number;
    process.stderr.write(`${c.model} batch ${c.batch} ${c.optimizer}: meshtrain ${fmt(r.peakMiB, 0)} MiB (estimate ${fmt(r.estimateMiB, 0)}), PyTorch ${fmt(r.peerPeakMiB, 0)} MiB\n`);
  }
  data.memory = "kernel, own pass";
  fs.writeFileSync(file, JSON.stringify(data, null, 2));
  await render();
}

(process.argv.includes("--render") ? render() : process.argv.includes("--memory") ? memory() : main()).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
