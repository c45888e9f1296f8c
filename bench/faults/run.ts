import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { cpuName, fmt, machine, median, QUICK, RESULTS, runJson, writeResults, type Json } from "../common";
import { rng } from "../../sdk/data/random";
import { HEARTBEAT, SCENARIOS } from "./scenarios";

/**
 * The fault-injection benchmark (`npm run bench:faults`): for each strategy and the recovery it
 * has, trials of a fault (SIGKILL, or SIGSTOP) to a random worker (or the server) at a random
 * step of a small MLP's fit, each against the same fit run without a fault. Reports whether the
 * fit survived (or the typed error it ended with, and how soon), how soon the loss was noticed
 * and the first step ran without the victim, steps run again, the step time before and after,
 * an idle spare's memory, and the final weights' difference from the uninterrupted run.
 */

const TRIALS = QUICK ? 1 : 3;
/** Long enough that a new worker (a process and a backend to start) joins before the end. */
const STEPS = QUICK ? 16 : 200;
const SEED = 7;
/** `--only a,b`: the scenarios whose names contain one of these, their rows merged into the last full run's results. */
const ONLY = ((i) => (i > 0 ? process.argv[i + 1]!.split(",") : null))(process.argv.indexOf("--only"));

/** ||a - b|| / ||b|| over the whole weight vector. */
function relativeDifference(a: Buffer, b: Buffer): number {
  const x = new Float32Array(a.buffer, a.byteOffset, a.byteLength / 4);
  const y = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  let d = 0;
  let n = 0;
  for (let i = 0; i < y.length; i++) {
    d += (x[i]! - y[i]!) ** 2;
    n += y[i]! ** 2;
  }
  return Math.sqrt(d) / Math.max(Math.sqrt(n), 1e-12);
}

async function trial(index: number, k: number, at: string, victim: number, weights: string): Promise<Json> {
  const args = [path.join(__dirname, "fault-fit.js"), String(index), String(k), String(STEPS), at, String(victim), weights];
  const env = QUICK ? { ...process.env, MESHTRAIN_FAULTS_SILENCE_MS: "6000" } : process.env;
  const [out] = await runJson(process.execPath, args, env, 300_000);
  return out!;
}

async function main(): Promise<void> {
  const rnd = rng(SEED);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-faults-"));
  const rows: Json[] = [];
  try {
    for (const [index, s] of SCENARIOS.entries()) {
      if ((QUICK && !s.quick) || (ONLY && !ONLY.some((o) => s.name.includes(o)))) continue;
      const base = path.join(tmp, `${index}-base.bin`);
      const uninterrupted = await trial(index, 0, "none", 1, base);
      const trials: Json[] = [];
      for (let k = 1; k <= TRIALS; k++) {
        const victim = s.victims === "server" ? -1 : s.victims[Math.floor(rnd() * s.victims.length)]!;
        const at = 3 + Math.floor(rnd() * (STEPS / 2 - 3));
        const file = path.join(tmp, `${index}-${k}.bin`);
        const t = await trial(index, k, String(at), victim, file);
        if (t.survived && fs.existsSync(file)) t.difference = relativeDifference(fs.readFileSync(file), fs.readFileSync(base));
        trials.push(t);
        process.stderr.write(`${s.name}: trial ${k}/${TRIALS}: ${t.survived ? "survived" : String(t.error)}\n`);
      }
      rows.push({ scenario: s.name, signal: s.signal, uninterrupted, trials });
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (!ONLY) return writeResults("faults", { machine: machine(), quick: QUICK, steps: STEPS, heartbeat: heartbeat(), rows }, markdown(rows, []));
  const last = JSON.parse(fs.readFileSync(path.join(RESULTS, "faults.json"), "utf8")) as Json;
  const byName = new Map([...(last.rows as Json[]), ...rows].map((r) => [String(r.scenario), r]));
  const merged = SCENARIOS.flatMap((s): Json[] => { const r = byName.get(s.name); return r ? [r] : []; });
  const again: Json[] = [...((last.again as Json[] | undefined) ?? []), { rows: rows.map((r) => r.scenario), machine: machine() }];
  writeResults("faults", { ...last, rows: merged, again }, markdown(merged, again));
}

/** The heartbeat the trials ran with (the smoke run's is longer). */
function heartbeat(): { intervalMs: number; timeoutMs: number } {
  return { intervalMs: HEARTBEAT.intervalMs, timeoutMs: QUICK ? 6000 : HEARTBEAT.timeoutMs };
}

function markdown(rows: Json[], again: Json[]): string {
  const num = (ts: Json[], f: string): number => median(ts.map((t) => t[f]).filter((v): v is number => typeof v === "number"));
  const lines = [
    `### What survives what (a 64-128-128-10 MLP, batch 96, ${STEPS} steps, 3 local workers, ${TRIALS} trial(s) each, ${cpuName()})`,
    "",
    "| strategy and recovery | fault | survived | noticed after (ms) | first step without it (ms) | back to full size (ms) | steps run again | step ms: uninterrupted, before / after | idle spare RSS | weights vs uninterrupted (max) | or: the error, and after |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const ts = r.trials as Json[];
    const ok = ts.filter((t) => t.survived);
    const diffs = ok.map((t) => t.difference).filter((v): v is number => typeof v === "number");
    const failed = ts.find((t) => !t.survived);
    const spare = num(ts, "spareRssMiB");
    lines.push(
      `| ${String(r.scenario)} | ${String(r.signal)} | ${ok.length}/${ts.length} | ${fmt(num(ok, "noticedMs"), 0)} | ${fmt(num(ok, "recoveredMs"), 0)} | ${fmt(num(ok, "fullSizeMs"), 0)} | ${fmt(num(ok, "replayed"), 0)} | ${fmt(Number((r.uninterrupted as Json).stepMsBefore), 1)}, ${fmt(num(ok, "stepMsBefore"), 1)} / ${fmt(num(ok, "stepMsAfter"), 1)} | ${Number.isFinite(spare) ? `${fmt(spare, 0)} MiB` : "-"} | ${diffs.length ? Math.max(...diffs).toExponential(1) : "-"} | ${failed ? `${String(failed.error).replace(/\|/g, "/").slice(0, 140)}, ${fmt(Number(failed.errorAfterMs), 0)} ms` : ""} |`,
    );
  }
  lines.push(
    "",
    `Heartbeat: every ${heartbeat().intervalMs} ms, lost after ${heartbeat().timeoutMs} ms of silence, which is what a frozen (SIGSTOP) worker costs before anything else happens. "Noticed after" is from the fault to the driver's record of the loss; "first step without it" to the first step recorded that ran without the victim (steps in flight may still finish with its part; with a spare, the step it joins at, after its load); "back to full size" to the first step on as many workers as before the fault (a spare or a new worker in; "-": the fit went on with fewer). Async parameter servers differ from an uninterrupted run by design (pushes land in another order), and so does local SGD (its replicas differ between syncs: after a loss the others go back to the last sync and share the lost one's slices, which equals local SGD simulated with that membership change, as local-sgd.test.ts holds it, not the run without it); every other strategy that survives should be within 1e-4. ZeRO's "steps run again" are those since its last checkpoint. Strategies whose row says a WorkerLostError do not survive a lost worker yet: the fit ends, naming it, and resumes from a checkpoint by hand (docs/faults.md).`,
    ...again.map((a) => `Measured again on ${String((a.machine as Json).date).slice(0, 10)} (\`-- --only\`), the rest of the table left as its run had it: ${(a.rows as string[]).join("; ")}.`),
    `Command: \`npm run bench:faults\`${QUICK ? " (--quick)" : ""}.`,
  );
  return lines.join("\n");
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
