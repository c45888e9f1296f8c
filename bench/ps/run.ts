import * as path from "node:path";
import { fmt, machine, median, QUICK, runJson, writeResults, type Json } from "../common";

/**
 * Parameter-server benchmark: throughput of sync and async parameter servers beside
 * data-parallel all-reduce (the peer), each with and without a 3x straggler, on the demo's
 * MNIST CNN (3 workers, 1 server, global batch 96). Every configuration runs in its own
 * process, rounds interleaved; medians of the rounds.
 */

const ROUNDS = QUICK ? 1 : 3;
const STEPS = QUICK ? 8 : 40;
const WORKERS = 3;
const BATCH = 96;
const SLOW = 3;

const kinds = [
  { kind: "data", label: "data parallel, ring all-reduce (peer)" },
  { kind: "sync", label: "parameter server, sync" },
  { kind: "async", label: "parameter server, async" },
] as const;

async function main(): Promise<void> {
  const results: Record<string, Json[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const k of kinds) {
      // --quick (the smoke test) runs each kind once, the straggler run only for async (it draws the staleness column).
      for (const slow of QUICK ? (k.kind === "async" ? [SLOW] : [1]) : [1, SLOW]) {
        const key = `${k.kind}/${slow}`;
        const args = [path.join(__dirname, "ps-fit.js"), k.kind, String(WORKERS), "1", String(slow), String(BATCH), String(STEPS)];
        const [out] = await runJson(process.execPath, args, process.env);
        (results[key] ??= []).push(out!);
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${key}\n`);
      }
    }
  }
  const med = (key: string, field: string): number => median((results[key] ?? []).map((r) => r[field] as number).filter((v) => typeof v === "number"));
  const peer = med("data/1", "samplesPerSecond");
  const rows: Json[] = [];
  const table = [
    `| strategy | samples/s, no straggler | samples/s, rank 0 ${SLOW}x slower | kept with the straggler | vs all-reduce, no straggler | staleness median / max (straggler run) |`,
    "|---|---|---|---|---|---|",
  ];
  for (const k of kinds) {
    const fast = med(`${k.kind}/1`, "samplesPerSecond");
    const slow = med(`${k.kind}/${SLOW}`, "samplesPerSecond");
    const st = k.kind === "async" ? `${fmt(med(`${k.kind}/${SLOW}`, "stalenessMedian"), 0)} / ${fmt(med(`${k.kind}/${SLOW}`, "stalenessMax"), 0)}` : k.kind === "sync" ? "0 / 0" : "-";
    rows.push({ kind: k.kind, fast, slow, kept: slow / fast, vsPeer: fast / peer, runs: { fast: results[`${k.kind}/1`], slow: results[`${k.kind}/${SLOW}`] } });
    table.push(`| ${k.label} | ${fmt(fast, 0)} | ${fmt(slow, 0)} | ${fmt(slow / fast)} | ${fmt(fast / peer)} | ${st} |`);
  }
  const backend = String(results["data/1"]?.[0]?.backend ?? "?");
  const md = [
    `### Parameter servers against all-reduce, with and without a straggler (the demo's MNIST CNN, ${WORKERS} workers, 1 server, global batch ${BATCH}, ${backend} backend, medians of ${ROUNDS} rounds of ${STEPS} steps)`,
    "",
    ...table,
    "",
    `The straggler is made with \`.slowdown(0, ${SLOW})\`: after computing each step, rank 0 waits ${SLOW - 1}x the time that took. "Kept" is throughput with the straggler over throughput without it: sync training and all-reduce wait for the slowest worker every step; async parameter servers keep the others going and pay in staleness (updates a push missed between its pull and its arrival). Async throughput counts samples per wall second of rounds of ${WORKERS} pushes. ${WORKERS} workers, a server and the driver share this machine's 2 cores.`,
    "Command: `npm run bench:ps`.",
  ].join("\n");
  writeResults("ps", { machine: machine(), quick: QUICK, rows }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
