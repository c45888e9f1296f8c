import * as path from "node:path";
import { nativeDataPlane } from "../../sdk/collectives/native-plane";
import { BLAS, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, runJson, runRanks, torchMissing, writeResults, type Json } from "../common";

/**
 * Gradient compression, side by side in one run: 2 local workers trained with float32, fp16
 * and bf16 gradients (error feedback) on three models, against PyTorch DDP with and without its
 * fp16 compression hook (its bf16 hook needs NCCL): samples/s and bytes sent per worker and
 * step. Then the demo CNN on real MNIST digits, data parallelism and sync parameter servers,
 * float32 against 16-bit: held-out accuracy (median of seeds), speed and bytes.
 */

const ROUNDS = QUICK ? 1 : 3;
const BATCH = 64;
const STEPS = { mlp: QUICK ? 10 : 150, cnn: QUICK ? 4 : 30, mlp10m: QUICK ? 3 : 20 };
const ALL_MODELS = ["mlp", "cnn", "mlp10m"] as const;
/** --quick (the smoke test) runs one model on both data planes: it checks the benchmark runs, not how fast. */
const MODELS: ReadonlyArray<(typeof ALL_MODELS)[number]> = QUICK ? ["mlp"] : ALL_MODELS;
const NAMES = { mlp: "MLP", cnn: "CNN", mlp10m: "MLP 11.4M" };
const FORMATS = ["float32", "fp16", "bf16"] as const;
const SEEDS = QUICK ? [7] : [7, 8, 9];
const EPOCHS = QUICK ? 1 : 3;
type Model = (typeof ALL_MODELS)[number];
type Format = (typeof FORMATS)[number];
/** --quick (the smoke test) checks each path runs: bf16 takes fp16's. */
const RUN_FORMATS: readonly Format[] = QUICK ? ["float32", "fp16"] : FORMATS;

const NATIVE = nativeDataPlane();

/** The formats run on a plane: --quick runs the WebSocket plane with fp16 alone (the same script; its float32 ring is what the data-parallel tests run). */
function formatsOn(plane: "native" | "websocket"): readonly Format[] {
  return QUICK && plane === "websocket" ? RUN_FORMATS.filter((f) => f !== "float32") : RUN_FORMATS;
}
/** The WebSocket path for the model whose all-reduce weighs most: bytes matter most where bandwidth is lowest. */
const PLANES: Record<Model, Array<"native" | "websocket">> = { mlp: QUICK ? ["native", "websocket"] : ["native"], cnn: ["native"], mlp10m: ["native", "websocket"] };

async function meshtrain(model: Model, plane: "native" | "websocket", format: Format): Promise<Json> {
  const env = pinnedEnv(undefined, { FEED: "workers", DATA_PLANE: plane, COMPRESSION: format });
  const [m] = await runJson(process.execPath, [path.join(__dirname, "..", "scaling", "meshtrain-fit.js"), model, "2", String(BATCH), String(STEPS[model])], env);
  return m!;
}

async function ddp(model: Model, compress: "none" | "fp16"): Promise<number> {
  const port = ports(1);
  const lines = await runRanks(2, (r) => [
    PYTHON,
    [path.join(PEERS, "torch_ddp.py"), "--rank", String(r), "--world", "2", "--port", String(port), "--model", model, "--batch", String(BATCH), "--steps", String(STEPS[model]), "--compress", compress],
    pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas, PYTHONPATH: PEERS }),
  ]);
  return lines.find((l) => l.samples_per_second)!.samples_per_second as number;
}

async function speed(torchGone: string | null): Promise<{ rows: Json[]; table: string[] }> {
  const rates: Record<string, number[]> = {};
  const bytes: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const model of MODELS) {
      for (const plane of PLANES[model]) {
        for (const format of formatsOn(plane)) {
          const m = await meshtrain(model, plane, format);
          (rates[`${model}/${plane}/${format}`] ??= []).push(m.samples_per_second as number);
          (bytes[`${model}/${plane}/${format}`] ??= []).push(m.sent_bytes as number);
        }
      }
      if (!torchGone) for (const c of QUICK ? (["fp16"] as const) : (["none", "fp16"] as const)) (rates[`ddp/${model}/${c}`] ??= []).push(await ddp(model, c));
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${model} done\n`);
    }
  }
  const rows: Json[] = [];
  const table = [
    "| model | data plane | gradients | samples/s | / float32 | bytes sent per worker and step | DDP samples/s (float32 / fp16 hook) | DDP fp16 / float32 |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const model of MODELS) {
    const d = median(rates[`ddp/${model}/none`] ?? []);
    const d16 = median(rates[`ddp/${model}/fp16`] ?? []);
    for (const plane of PLANES[model]) {
      const base = median(rates[`${model}/${plane}/float32`] ?? []);
      for (const format of formatsOn(plane)) {
        const r = median(rates[`${model}/${plane}/${format}`] ?? []);
        const b = median(bytes[`${model}/${plane}/${format}`] ?? []);
        rows.push({ model, plane, compression: format, samplesPerSecond: r, ratioToFloat32: r / base, sentBytes: b, ddp: d, ddpFp16: d16, runs: rates[`${model}/${plane}/${format}`] });
        const peer = format === "float32" && plane === "native" && !torchGone ? `${fmt(d, 0)} / ${fmt(d16, 0)} | ${fmt(d16 / d)}` : "| ";
        table.push(`| ${NAMES[model]} | ${plane} | ${format} | ${fmt(r, 0)} | ${fmt(r / base)} | ${(b / 1024).toFixed(1)} KiB | ${peer} |`);
      }
    }
  }
  return { rows, table };
}

async function accuracy(): Promise<{ rows: Json[]; table: string[] }> {
  const runs: Record<string, Json[]> = {};
  const all: Array<[string, Format]> = [["data", "float32"], ["data", "fp16"], ["data", "bf16"], ["ps", "float32"], ["ps", "fp16"]];
  // --quick: data parallelism's fp16 alone (parameter servers go through the same script).
  const configs = QUICK ? all.filter(([s, f]) => s === "data" && f === "fp16") : all;
  for (const seed of SEEDS) {
    for (const [strategy, format] of configs) {
      const [r] = await runJson(process.execPath, [path.join(__dirname, "mnist-fit.js"), strategy, format, String(EPOCHS), String(seed), ...(QUICK ? ["1024"] : [])], pinnedEnv());
      (runs[`${strategy}/${format}`] ??= []).push(r!);
    }
    process.stderr.write(`MNIST, seed ${seed} done\n`);
  }
  const rows: Json[] = [];
  const table = ["| strategy | gradients | held-out accuracy (median) | each seed | samples/s | bytes sent per worker and step |", "|---|---|---|---|---|---|"];
  for (const [strategy, format] of configs) {
    const rs = runs[`${strategy}/${format}`] ?? [];
    const acc = rs.map((r) => 100 * (r.accuracy as number));
    const row = { strategy, compression: format, accuracy: median(acc), accuracies: acc, samplesPerSecond: median(rs.map((r) => r.samples_per_second as number)), sentBytes: median(rs.map((r) => r.sent_bytes as number)) };
    rows.push(row);
    table.push(`| ${strategy === "ps" ? "ps (sync, 1 server)" : "data"} | ${format} | ${fmt(row.accuracy)}% | ${acc.map((a) => a.toFixed(2)).join(", ")} | ${fmt(row.samplesPerSecond, 0)} | ${(row.sentBytes / 1024).toFixed(1)} KiB |`);
  }
  return { rows, table };
}

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const s = await speed(torchGone);
  const a = await accuracy();
  const md = [
    `### Gradient compression over loopback, 2 workers, ${BATCH} samples per worker per step (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...s.table,
    "",
    ...(torchGone ? [`DDP: not measured: ${torchGone}.`] : []),
    ...(NATIVE.ok ? [] : [`native data plane: not available (${NATIVE.reason}); the native rows ran over WebSockets.`]),
    "fp16 / bf16: strategy(\"data\", { compression }): the gradient travels as 16-bit floats, each worker carrying its rounding error to its next step (error feedback); DDP's fp16_compress_hook has none. Both sides hold their data (feed \"workers\"), as in bench:scaling.",
    "",
    `### Accuracy: the demo CNN on MNIST (8,000 training digits, 2,000 held out), 2 workers, Adam 0.001, ${EPOCHS} epoch(s), seeds ${SEEDS.join(", ")}`,
    "",
    ...a.table,
    "",
    "Command: `npm run bench:compression`.",
  ].join("\n");
  writeResults("compression", { machine: machine(), quick: QUICK, rows: [...s.rows.map((r) => ({ table: "speed", ...r })), ...a.rows.map((r) => ({ table: "accuracy", ...r }))] }, md, { key: (r) => `${String(r.model)}, ${String(r.plane)}, ${String(r.compression)}`, measures: ["samplesPerSecond"], include: (r) => r.table === "speed" });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
