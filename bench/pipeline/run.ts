import * as path from "node:path";
import { fmt, machine, median, QUICK, runJson, writeResults, type Json } from "../common";
import { theoreticalBubble } from "../../sdk/plan/schedules";

/**
 * Pipeline benchmark, two tables:
 *  1. GPipe's bubble as measured on the workers (idle share of stage time within each step, from
 *     the forward/backward timestamps) against the theory (S-1)/(M+S-1) and against the plan's
 *     own prediction (the schedule simulated with costs from the cost model), for S = 2, 4 and
 *     M = 1, 4, 8, on a model of 8 equal layers so that stages are equal as the theory assumes.
 *  2. Predicted against measured throughput for each strategy on the MNIST CNN, with one worker
 *     training alone as the peer every speed-up is measured against.
 * Every configuration runs in its own process, rounds interleaved; medians of the rounds.
 */

const ROUNDS = QUICK ? 1 : 3;
const STEPS = QUICK ? 4 : 40;

interface Config {
  key: string;
  args: [string, number, number, number, "gpipe" | "1f1b", "deep" | "cnn", number];
}

// --quick (the smoke test) runs each kind of run once: it checks the benchmark runs, not how fast.
const bubbleConfigs: Config[] = (QUICK ? [[2, 4]] : [[2, 1], [2, 4], [2, 8], [4, 1], [4, 4], [4, 8]]).map(([S, M]) => ({
  key: `bubble/S${S}/M${M}`,
  args: ["pipeline", S!, S!, M!, "gpipe", "deep", 128],
}));

const strategyConfigs: Config[] = [
  { key: "1 worker (peer)", args: ["data", 1, 1, 1, "gpipe", "cnn", 64] },
  ...(QUICK ? [] : [{ key: "data, 2 workers", args: ["data", 2, 1, 1, "gpipe", "cnn", 64] } as Config]),
  { key: "model, 2 stages", args: ["model", 2, 2, 1, "gpipe", "cnn", 64] },
  ...(QUICK ? [] : [{ key: "pipeline GPipe, 2 stages x 4 micro", args: ["pipeline", 2, 2, 4, "gpipe", "cnn", 64] } as Config]),
  { key: "pipeline 1F1B, 2 stages x 4 micro", args: ["pipeline", 2, 2, 4, "1f1b", "cnn", 64] },
  ...(QUICK ? [] : [{ key: "hybrid, 2 replicas x 2 stages x 4 micro", args: ["hybrid", 4, 2, 4, "1f1b", "cnn", 64] } as Config]),
];

async function main(): Promise<void> {
  const results: Record<string, Json[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of [...bubbleConfigs, ...strategyConfigs]) {
      const [strategy, workers, stages, micro, schedule, model, batch] = c.args;
      const args = [path.join(__dirname, "pipeline-fit.js"), strategy, String(workers), String(stages), String(micro), schedule, model, String(batch), String(STEPS)];
      const [out] = await runJson(process.execPath, args, process.env);
      (results[c.key] ??= []).push(out!);
      process.stderr.write(`round ${round + 1}/${ROUNDS}: ${c.key}\n`);
    }
  }
  const med = (key: string, field: string): number => median((results[key] ?? []).map((r) => r[field] as number).filter((v) => typeof v === "number"));
  const rows: Json[] = [];
  const bubbleTable = ["| stages S | micro-batches M | theory (S-1)/(M+S-1) | predicted (plan) | measured | measured samples/s |", "|---|---|---|---|---|---|"];
  for (const c of bubbleConfigs) {
    const [, , S, M] = c.args;
    const theory = theoreticalBubble(S, M);
    const row = { table: "bubble", stages: S, microBatches: M, theory, predicted: med(c.key, "predictedBubble"), measured: med(c.key, "measuredBubble"), samplesPerSecond: med(c.key, "measuredSamplesPerSecond"), runs: results[c.key] };
    rows.push(row);
    bubbleTable.push(`| ${S} | ${M} | ${fmt(theory)} | ${fmt(row.predicted)} | ${fmt(row.measured)} | ${fmt(row.samplesPerSecond, 0)} |`);
  }
  const peer = med(strategyConfigs[0]!.key, "measuredSamplesPerSecond");
  const strategyTable = ["| strategy (MNIST CNN, batch 64) | workers | predicted samples/s | measured samples/s | measured / predicted | speed-up vs 1 worker | measured bubble |", "|---|---|---|---|---|---|---|"];
  for (const c of strategyConfigs) {
    const predicted = med(c.key, "predictedSamplesPerSecond");
    const measured = med(c.key, "measuredSamplesPerSecond");
    const bubble = med(c.key, "measuredBubble");
    rows.push({ table: "strategies", config: c.key, workers: c.args[1], predicted, measured, ratio: measured / predicted, speedUp: measured / peer, bubble, runs: results[c.key] });
    strategyTable.push(`| ${c.key} | ${c.args[1]} | ${fmt(predicted, 0)} | ${fmt(measured, 0)} | ${fmt(measured / predicted)} | ${fmt(measured / peer)} | ${Number.isFinite(bubble) ? fmt(bubble) : "-"} |`);
  }
  const md = [
    `### Pipeline bubble: GPipe measured against the theory (8 equal dense layers of 512, batch 128, medians of ${ROUNDS} rounds of ${STEPS} steps)`,
    "",
    ...bubbleTable,
    "",
    "Measured: the share of stage time spent idle in each step, from when every forward and backward ran on the workers (on the driver's clock); the median over steps after warm-up. Predicted: the plan's schedule simulated with costs from its cost model and the workers' measured speeds. The theory assumes equal stages and free communication; the measured bubble also counts waiting for activations to cross the link, and with 4 workers on this machine's 2 cores, stages that run at once share a core.",
    "",
    `### Predicted against measured throughput, by strategy (MNIST CNN, batch 64, medians of ${ROUNDS} rounds of ${STEPS} steps)`,
    "",
    ...strategyTable,
    "",
    "Predicted: the plan fit() made, from the model's profile (every layer's forward and backward, and a data-parallel replica's whole step, timed on the slowest worker at the batch and an eighth of it before training, the median of repeats), how much the workers sharing this machine slow each other (all stepping at once against one alone, measured with the profile), the links' bandwidth and latency measured when the workers joined (for data parallelism, the data ring's own all-reduce, timed on it before the fit), and the driver's feed. Pipelines are simulated with the machine's cores shared among whatever runs at once: stages computing and hand-offs of activations and gradients (each keeps two communication threads busy). The peer is one worker training alone in the same run. On 2 cores, splitting one model over workers cannot beat one worker: these runs show what splitting costs, which is the point of the model-parallel notebooks.",
    "Command: `npm run bench:pipeline`.",
  ].join("\n");
  writeResults("pipeline", { machine: machine(), quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
