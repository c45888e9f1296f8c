import * as path from "node:path";
import { discoverAdapters } from "../../sdk/backends/webgpu/discover";
import { vulkanEnv } from "../../sdk/backends/webgpu/vulkan";
import { commandFor } from "../results-root";
import { fmt, machine, median, pinnedEnv, QUICK, runJson, writeResults, type Json } from "../common";

/**
 * GPU workers beside CPU workers: the MLP and the CNN on every backend present, one process each
 * (the worker's own replica step), and 2 data-parallel workers on their GPUs beside 2 on the
 * native CPU kernels, with each step's readback and upload measured. Without a GPU the webgpu
 * rows run on the software adapter (SwiftShader): a CPU rasteriser whose figures compare only
 * with each other. On a machine with a GPU the same command runs them on it.
 */

const ROUNDS = QUICK ? 1 : 3;
/** --quick (the smoke test) checks the rows run, not how fast: on a software adapter a batch of 64 took minutes. */
const BATCH = QUICK ? 8 : 64;
const WARMUP = QUICK ? 1 : 3;

interface Row {
  label: string;
  run(): Promise<Json>;
}

function single(model: "mlp" | "cnn", backend: string, steps: number, env: NodeJS.ProcessEnv = {}): Row {
  return { label: `${model} ${backend}, 1 process`, run: async () => (await runJson(process.execPath, [path.join(__dirname, "..", "train", "tfjs-train.js"), model, backend, String(BATCH), String(steps), String(WARMUP)], pinnedEnv(1, env)))[0]! };
}

function pair(model: "mlp" | "cnn", where: "gpu" | "native", steps: number): Row {
  return { label: `${model} ${where === "gpu" ? "webgpu" : "native"}, 2 workers`, run: async () => (await runJson(process.execPath, [path.join(__dirname, "cluster-fit.js"), model, where, String(steps), String(BATCH)], pinnedEnv(1)))[0]! };
}

async function main(): Promise<void> {
  const survey = await discoverAdapters();
  const hardware = survey.adapters.filter((a) => !a.software && a.ordinal === 0);
  const adapter = hardware[0] ?? survey.adapters.find((a) => a.software);
  process.stderr.write(`adapters: ${survey.adapters.map((a) => `${a.name}${a.software ? " (software)" : ""}`).join(", ") || "none"}${survey.problems.length ? `; ${survey.problems.join("; ")}` : ""}\n`);
  process.stderr.write(`on a machine with a GPU this bench runs the webgpu rows on its first hardware adapter; here: ${adapter ? `${adapter.name}${adapter.software ? " (software)" : ""}` : "none"}\n`);
  const gpuEnv = vulkanEnv(null);
  const q = (n: number): number => (QUICK ? Math.max(3, Math.round(n / 10)) : n);
  // --quick (the smoke test) checks every kind of row runs: one CPU row, one webgpu process, webgpu workers.
  const rows: Row[] = [
    single("mlp", "native", q(200)),
    ...(QUICK ? [] : [single("mlp", "wasm", q(60))]),
    ...(adapter ? [single("mlp", "webgpu", q(30), gpuEnv)] : []),
    ...(QUICK ? [] : [single("cnn", "native", q(30))]),
    ...(adapter && !QUICK ? [single("cnn", "webgpu", q(8), gpuEnv)] : []),
    ...(QUICK ? [] : [pair("mlp", "native", q(60))]),
    ...(adapter ? [pair("mlp", "gpu", q(20))] : []),
  ];
  const results = new Map<Row, Json[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const r of rows) {
      const line = await r.run();
      (results.get(r) ?? results.set(r, []).get(r)!).push(line);
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${r.label}: ${fmt(line.samples_per_second as number, 0)} samples/s\n`);
    }
  }
  const med = (r: Row, key: string): number => median((results.get(r) ?? []).map((l) => l[key] as number));
  const table = ["| run | device | samples/s | readback + upload, ms per step | all-reduce, ms per step |", "|---|---|---|---|---|"];
  const out: Json[] = [];
  for (const r of rows) {
    const first = results.get(r)![0]!;
    const transfer = first.transfer_ms !== undefined ? med(r, "transfer_ms") : med(r, "readback_ms") + med(r, "upload_ms");
    const allreduce = first.allreduce_ms !== undefined ? fmt(med(r, "allreduce_ms"), 1) : "-";
    out.push({ run: r.label, device: first.device, samplesPerSecond: med(r, "samples_per_second"), transferMs: transfer, runs: results.get(r) });
    table.push(`| ${r.label} | ${first.device} | ${fmt(med(r, "samples_per_second"), 0)} | ${fmt(transfer, 1)} | ${allreduce} |`);
  }
  const software = adapter?.software ?? true;
  // What the GPU gave over the native CPU worker, each model's 1-process rows of this same run.
  const over = (["mlp", "cnn"] as const).flatMap((m) => {
    const row = (b: string): Row | undefined => rows.find((r) => r.label === `${m} ${b}, 1 process`);
    const [gpu, cpu] = [row("webgpu"), row("native")];
    return gpu && cpu ? [`${m.toUpperCase()} ${fmt(med(gpu, "samples_per_second") / med(cpu, "samples_per_second"), 3)}x`] : [];
  });
  const md = [
    `### GPU workers beside CPU workers, batch ${BATCH}, SGD (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...table,
    "",
    software
      ? `No GPU here: the webgpu rows ran on ${adapter ? `the software adapter "${adapter.name}" (${adapter.description})` : "no adapter"}, a CPU rasteriser. Those figures compare only with each other (how a step's time splits into compute and device transfers); they say nothing of a real GPU's speed. No real GPU has run this code yet.`
      : `The webgpu rows ran on "${adapter!.name}".`,
    ...(over.length > 0 ? [`WebGPU over the native CPU worker, samples/s, 1 process each: ${over.join(", ")}${software ? " (a software adapter: not a GPU's figure)" : ""}.`] : []),
    "MLP 784-256-256-10; CNN conv3x3x32, max pool, conv3x3x64, max pool, dense 128, dense 10. \"1 process\": the worker's own replica step; \"2 workers\": data parallelism on local workers, each on its own device.",
    `Command: ${commandFor("bench:gpu")}.`,
  ].join("\n");
  writeResults("gpu", { machine: machine(), quick: QUICK, batch: BATCH, adapter: adapter ?? null, rows: out }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
