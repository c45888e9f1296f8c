import * as path from "node:path";
import { BLAS, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, runJson, runRanks, torchMissing, writeResults, type Json } from "../common";

/**
 * Data-parallel scaling on this machine: meshtrain with 1 and 2 local workers against PyTorch
 * DDP on gloo with 1 and 2 processes, same per-worker batch; throughput, speed-up and scaling
 * efficiency (speed-up / N). On a 2-core machine, 2 workers is the most that can scale.
 */

const ROUNDS = QUICK ? 1 : 3;
const BATCH = 64;
const STEPS = { mlp: QUICK ? 10 : 150, cnn: QUICK ? 4 : 30 };
const WORLDS = [1, 2];

async function main(): Promise<void> {
  const torchGone = torchMissing();
  const rates: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const model of ["mlp", "cnn"] as const) {
      for (const n of WORLDS) {
        const [m] = await runJson(process.execPath, [path.join(__dirname, "meshtrain-fit.js"), model, String(n), String(BATCH), String(STEPS[model])], pinnedEnv());
        (rates[`meshtrain/${model}/${n}`] ??= []).push(m!.samples_per_second as number);
        if (!torchGone) {
          const port = ports(1);
          const lines = await runRanks(n, (r) => [
            PYTHON,
            [path.join(PEERS, "torch_ddp.py"), "--rank", String(r), "--world", String(n), "--port", String(port), "--model", model, "--batch", String(BATCH), "--steps", String(STEPS[model])],
            pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas, PYTHONPATH: PEERS }),
          ]);
          (rates[`ddp/${model}/${n}`] ??= []).push(lines.find((l) => l.samples_per_second)!.samples_per_second as number);
        }
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${model} with ${n} worker(s) done\n`);
      }
    }
  }
  const rows: Json[] = [];
  const table = ["| model | workers | meshtrain samples/s | speed-up | efficiency | DDP (gloo) samples/s | speed-up | efficiency |", "|---|---|---|---|---|---|---|---|"];
  for (const model of ["mlp", "cnn"] as const) {
    for (const n of WORLDS) {
      const m = median(rates[`meshtrain/${model}/${n}`] ?? []);
      const m1 = median(rates[`meshtrain/${model}/1`] ?? []);
      const d = median(rates[`ddp/${model}/${n}`] ?? []);
      const d1 = median(rates[`ddp/${model}/1`] ?? []);
      rows.push({ model, workers: n, meshtrain: m, meshtrainSpeedup: m / m1, ddp: d, ddpSpeedup: d / d1, runs: { meshtrain: rates[`meshtrain/${model}/${n}`], ddp: rates[`ddp/${model}/${n}`] } });
      table.push(`| ${model.toUpperCase()} | ${n} | ${fmt(m, 0)} | ${fmt(m / m1)} | ${fmt(m / m1 / n)} | ${torchGone ? "-" : fmt(d, 0)} | ${torchGone ? "-" : fmt(d / d1)} | ${torchGone ? "-" : fmt(d / d1 / n)} |`);
    }
  }
  const md = [
    `### Data-parallel scaling, ${BATCH} samples per worker per step, SGD (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...table,
    "",
    ...(torchGone ? [`DDP: not measured: ${torchGone}.`] : []),
    "speed-up(N) = throughput(N) / throughput(1 worker); efficiency = speed-up / N. Every worker has one core; with 2 cores, 2 workers is all this machine can show.",
    "meshtrain's driver feeds every step's data over WebSockets; DDP's ranks hold their data.",
    "Command: `npm run bench:scaling`.",
  ].join("\n");
  writeResults("scaling", { machine: machine(), quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
