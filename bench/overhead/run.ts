import * as path from "node:path";
import { fmt, machine, median, pinnedEnv, QUICK, runJson, writeResults, type Json } from "../common";

/**
 * meshtrain's cost per step: a one-worker cluster (driver feeds the batch over WebSockets, the
 * worker's two threads, the step protocol) against the same replica step in a bare
 * single-process loop, same backend, same batch.
 */

const ROUNDS = QUICK ? 1 : 3;
const BATCH = 64;
const STEPS = { mlp: QUICK ? 20 : 300, cnn: QUICK ? 4 : 30 };

async function main(): Promise<void> {
  const ms: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const model of ["mlp", "cnn"] as const) {
      const [bare] = await runJson(process.execPath, [path.join(__dirname, "..", "train", "tfjs-train.js"), model, "native", String(BATCH), String(STEPS[model]), "5"], pinnedEnv());
      (ms[`bare/${model}`] ??= []).push((BATCH / (bare!.samples_per_second as number)) * 1000);
      const [one] = await runJson(process.execPath, [path.join(__dirname, "..", "scaling", "meshtrain-fit.js"), model, "1", String(BATCH), String(STEPS[model])], pinnedEnv());
      (ms[`cluster/${model}`] ??= []).push(one!.median_step_ms as number);
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${model} done\n`);
    }
  }
  const rows: Json[] = [];
  const table = ["| model | bare TF.js loop ms/step | 1-worker cluster ms/step | overhead ms/step | cluster / bare |", "|---|---|---|---|---|"];
  for (const model of ["mlp", "cnn"] as const) {
    const b = median(ms[`bare/${model}`] ?? []);
    const c = median(ms[`cluster/${model}`] ?? []);
    rows.push({ model, bareMsPerStep: b, clusterMsPerStep: c, overheadMs: c - b, runs: { bare: ms[`bare/${model}`], cluster: ms[`cluster/${model}`] } });
    table.push(`| ${model.toUpperCase()} | ${fmt(b)} | ${fmt(c)} | ${fmt(c - b)} | ${fmt(c / b)} |`);
  }
  const md = [
    `### meshtrain's overhead per step, batch ${BATCH}, native backend (medians of ${ROUNDS} interleaved rounds)`,
    "",
    ...table,
    "",
    "The cluster's step time is the median wall time between step completions at the driver; the bare loop runs the same replica step in one process.",
    "Command: `npm run bench:overhead`.",
  ].join("\n");
  writeResults("overhead", { machine: machine(), quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
