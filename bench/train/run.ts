import * as path from "node:path";
import { loadAddon } from "../../sdk/backends/native/addon";
import { ALLOCATOR_KEPT, BLAS, blasMissing, cpuName, fmt, machine, median, PEERS, pinnedEnv, PYTHON, QUICK, runJson, torchMissing, writeResults, type Json } from "../common";

/**
 * Training throughput on one core: meshtrain on each backend it can use against PyTorch 1.13
 * with OpenBLAS and with Debian's reference BLAS, same models, batch 64, SGD, one thread
 * everywhere, interleaved rounds, medians.
 */

const ROUNDS = QUICK ? 1 : 3;
/** Steps run before the measured ones; --quick (the smoke test) runs one: it checks the benchmark runs, not how fast. */
const WARMUP = QUICK ? "1" : "5";
const BATCH = 64;

type BenchModel = "mlp" | "cnn" | "sentiment";

interface Variant {
  label: string;
  model: BenchModel;
  /** Steps measured after warm-up; chosen so each measurement takes a few seconds. */
  steps: number;
  run(steps: number): Promise<Json[]>;
  missing: string | null;
}

/** autodiff: the native kernels under TF.js's autodiff, as models the native step does not compile train. */
function meshtrain(model: BenchModel, backend: string, steps: number, missing: string | null = null, autodiff = false): Variant {
  return {
    label: `meshtrain ${backend}${autodiff ? ", autodiff" : ""}`,
    model,
    steps,
    missing,
    run: (s) => runJson(process.execPath, [path.join(__dirname, "tfjs-train.js"), model, backend, String(BATCH), String(s), WARMUP], pinnedEnv(1, { ...ALLOCATOR_KEPT, ...(autodiff ? { MESHTRAIN_NATIVE_STEP: "0" } : {}) })),
  };
}

/** The issues' targets: the MLP at 0.9x PyTorch's samples/s, the CNN and the embedding + LSTM at 1.0x (issue 63's: every model at PyTorch's speed). */
const TARGET = { mlp: 0.9, cnn: 1.0, sentiment: 1.0 } as const;

function torch(model: BenchModel, blas: keyof typeof BLAS, steps: number, torchGone: string | null): Variant {
  return {
    label: `PyTorch ${blas === "openblas" ? "OpenBLAS" : "reference BLAS"}`,
    model,
    steps,
    missing: torchGone ?? blasMissing(blas),
    run: (s) =>
      runJson(PYTHON, [path.join(PEERS, "torch_train.py"), "--model", model, "--batch", String(BATCH), "--threads", "1", "--steps", String(s), "--warmup", WARMUP], pinnedEnv(1, { ...ALLOCATOR_KEPT, LD_LIBRARY_PATH: BLAS[blas] })),
  };
}

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const native = loadAddon();
  const nativeGone = native.ok ? null : native.reason;
  const q = (n: number): number => (QUICK ? Math.max(2, Math.round(n / 20)) : n);
  const all: Variant[] = [
    meshtrain("mlp", "native", q(400), nativeGone),
    meshtrain("mlp", "native", q(400), nativeGone, true),
    meshtrain("mlp", "wasm", q(150)),
    meshtrain("mlp", "cpu", q(15)),
    torch("mlp", "openblas", q(600), torchGone),
    torch("mlp", "reference", q(60), torchGone),
    meshtrain("cnn", "native", q(40), nativeGone),
    meshtrain("cnn", "native", q(40), nativeGone, true),
    meshtrain("cnn", "wasm", q(12)),
    torch("cnn", "openblas", q(40), torchGone),
    torch("cnn", "reference", q(25), torchGone),
    meshtrain("sentiment", "native", q(20), nativeGone),
    torch("sentiment", "openblas", q(60), torchGone),
  ];
  // --quick: each script and path once (the native step, autodiff, another backend, PyTorch, the LSTM);
  // every process costs seconds of start-up on a slow machine, and the smoke test times nothing.
  const smoke = new Set(["mlp meshtrain native", "mlp meshtrain native, autodiff", "mlp meshtrain wasm", "mlp PyTorch OpenBLAS", "sentiment meshtrain native", "sentiment PyTorch OpenBLAS"]);
  const variants = QUICK ? all.filter((v) => smoke.has(`${v.model} ${v.label}`)) : all;
  const results = new Map<Variant, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of variants) {
      if (v.missing) continue;
      const [line] = await v.run(v.steps);
      (results.get(v) ?? results.set(v, []).get(v)!).push(line!.samples_per_second as number);
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${v.model} ${v.label}: ${fmt(line!.samples_per_second as number, 0)} samples/s\n`);
    }
  }
  const rows: Json[] = [];
  const table = ["| model | runtime | samples/s | vs PyTorch OpenBLAS | target |", "|---|---|---|---|---|"];
  for (const model of [...new Set(variants.map((v) => v.model))]) {
    const peer = variants.find((v) => v.model === model && v.label === "PyTorch OpenBLAS")!;
    const peerRate = median(results.get(peer) ?? []);
    for (const v of variants.filter((x) => x.model === model)) {
      const rate = median(results.get(v) ?? []);
      const ratio = rate / peerRate;
      const isTarget = v.label === "meshtrain native";
      rows.push({ model, runtime: v.label, samplesPerSecond: rate, runs: results.get(v) ?? [], ratioToPyTorchOpenBLAS: ratio, missing: v.missing });
      const cell = v.missing ? `not measured: ${v.missing}` : fmt(rate, 0);
      const goal = `>= ${TARGET[model].toFixed(1)}x`;
      const verdict = isTarget && Number.isFinite(ratio) ? `${goal}: ${ratio >= TARGET[model] ? "reached" : "not reached"}` : "";
      table.push(`| ${model.toUpperCase()} | ${v.label} | ${cell} | ${v.missing ? "-" : fmt(ratio)} | ${verdict} |`);
    }
  }
  const md = [
    `### Training throughput, batch ${BATCH}, SGD, one thread (medians of ${ROUNDS} interleaved rounds)`,
    "",
    `Machine: ${cpuName()}. Every process ran with glibc's allocator keeping what it frees (bench/common.ts ALLOCATOR_KEPT), as a tuned PyTorch runs.`,
    "",
    ...table,
    "",
    "MLP 784-256-256-10; CNN conv3x3x32, max pool, conv3x3x64, max pool, dense 128, dense 10; SENTIMENT tfjs-examples' sentiment model at its defaults (reviews of 100 word ids, a 10,000-word embedding of 128, an LSTM of 32, one sigmoid unit, binary crossentropy). meshtrain runs the worker's own replica step (forward, backward, update).",
    "SENTIMENT on meshtrain: the native step (the LSTM's input projection of all 100 steps as one GEMM, the recurrence in C; the embedding's gradient the touched rows). The zoo of such models is bench:zoo's.",
    "meshtrain native: the native step (forward, loss and backward by the native kernels, no autodiff tape), which all three compile to; \"autodiff\": the same kernels under TF.js's autodiff (MESHTRAIN_NATIVE_STEP=0), as models with layers the native step does not compute train.",
    "The stock cpu backend is not run on the CNN: one step takes tens of seconds.",
    "Command: `npm run bench:train`.",
  ].join("\n");
  writeResults("train", { machine: machine(), quick: QUICK, batch: BATCH, rows }, md, { key: (r) => `${String(r.model)}, ${String(r.runtime)}`, measures: ["samplesPerSecond"], include: (r) => String(r.runtime).startsWith("meshtrain") });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
