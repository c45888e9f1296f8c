import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { BLAS, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, RESULTS, runJson, torchMissing, writeResults, type Json } from "../common";
import { LINKS, NamespaceHosts, type Link } from "./netns";
import { joined } from "./joined";
import { accuracyTable, measureAccuracy, type AccuracyRow } from "./accuracy";
import { computeOver, predictedOver, type Model, type Row } from "./rows";
import { kindOf } from "../regressions";

/**
 * Data parallelism between machines, made on one: namespace hosts on shaped links (see netns.ts),
 * the driver on a host of its own, each worker on its own host pinned to its own core. meshtrain
 * (float32 over the native data plane and over WebSockets, fp16, PowerSGD, local SGD / DiLoCo)
 * beside PyTorch DDP on gloo (plain, its fp16 hook, its PowerSGD hook) over the same links in the
 * same run, medians of interleaved rounds; with the bytes a worker sent per step and the plan's
 * prediction, made from the ring probe over those links.
 *
 * usage: npm run bench:network [-- --quick] [-- --links 1gbit,100mbit] [-- --workers 2] [-- --steps 300]
 */

const arg = (name: string): string | undefined => {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const ROUNDS = QUICK ? 1 : Number(arg("--rounds") ?? 3);
const BATCH = 64;
const WORKERS = Number(arg("--workers") ?? 2);
/** Results of another number of worker hosts go beside the 2-host ones, not over them. */
const NAME = WORKERS === 2 ? "network" : `network-${WORKERS}-workers`;
const LINKS_RUN: readonly Link[] = QUICK ? [LINKS[1]!] : LINKS.filter((l) => (arg("--links") ?? "10gbit,1gbit,100mbit").split(",").includes(l.rate));
/** `--models none`: no throughput rows (the accuracy runs alone, beside the last results' rows). */
const MODELS: readonly Model[] = QUICK ? ["mlp"] : (arg("--models") ?? "mlp,cnn,mlp10m").split(",").filter((m): m is Model => m === "mlp" || m === "cnn" || m === "mlp10m");
/** Some links or models only: the rest of the last results stay. */
const PARTS = !QUICK && ["--links", "--models", "--variants"].some((a) => arg(a) !== undefined);
/** --variants: only these of meshtrain's, and no DDP rows. */
const VARIANTS = arg("--variants")?.split(",");
const NAMES: Record<Model, string> = { mlp: "MLP", cnn: "CNN", mlp10m: "MLP 11.4M" };
/** Steps per run, by model: a slower link makes each step of a big model take seconds. */
const STEPS: Record<Model, number> = { mlp: QUICK ? 8 : 60, cnn: 16, mlp10m: 14 };
/**
 * `--steps n`: every run takes n steps. Five times the small MLP's 60 at 10 Gbit/s (5 rounds each,
 * 2026-11-29) did not narrow its rounds' spread (22374-33183 samples/s at 60, 27894-39699 at
 * 300): the runs differ from launch to launch more than within one.
 */
const STEPS_ARG = arg("--steps");
const stepsOf = (model: Model): number => (STEPS_ARG !== undefined ? Number(STEPS_ARG) : STEPS[model]);
const MESHTRAIN = VARIANTS ?? (QUICK ? ["float32", "sync-4", "ps-async"] : ["float32", "websocket", "fp16", "powersgd-4", "sync-8", "ps-sync", "ps-async"]);
const DDP = VARIANTS ? [] : QUICK ? ["none"] : ["none", "fp16", "powersgd"];

function meshtrain(hosts: NamespaceHosts, model: Model, variant: string): Promise<Json> {
  return joined(hosts, WORKERS, (port) => [path.join(__dirname, "meshtrain-join.js"), model, String(WORKERS), String(BATCH), String(stepsOf(model)), variant, hosts.address(0), String(port)], { server: variant.startsWith("ps-") });
}

/**
 * A DDP run that takes longer than this has hung: DDP's PowerSGD hook on gloo hung past gloo's
 * own timeout on the 11.4M MLP. The slowest run that finishes (float32 at 100 Mbit/s) takes
 * about 75 s.
 */
const DDP_LIMIT_MS = 240_000;

async function ddp(hosts: NamespaceHosts, model: Model, compress: string): Promise<Json> {
  const port = ports(1);
  // One rank that aborts (the PowerSGD hook on gloo) or hangs after the others ended leaves the rest waiting on gloo's 30-minute timeout: end them.
  const stop = (): void => void spawnSync("pkill", ["-f", `torch_ddp.py .*--port ${port} `]);
  let straggling: NodeJS.Timeout | undefined;
  const ranks = Array.from({ length: WORKERS }, (_, r) => {
    const [cmd, args] = hosts.command(r + 1, PYTHON, [path.join(PEERS, "torch_ddp.py"), "--rank", String(r), "--world", String(WORKERS), "--port", String(port), "--master", hosts.address(1), "--model", model, "--batch", String(BATCH), "--steps", String(stepsOf(model)), "--warmup", "3", "--compress", compress], r);
    return runJson(cmd, args, pinnedEnv(1, { LD_LIBRARY_PATH: BLAS.openblas, PYTHONPATH: PEERS, GLOO_SOCKET_IFNAME: hosts.interfaceOf(r + 1) }), DDP_LIMIT_MS).then(
      (lines) => ((straggling ??= setTimeout(stop, 60_000)), lines),
      (err: unknown) => (stop(), Promise.reject(err)),
    );
  });
  try {
    const settled = await Promise.allSettled(ranks);
    // Rank 0 prints the measurement; a rank that hung after it and was ended does not make it fail.
    const line = settled.flatMap((x) => (x.status === "fulfilled" ? x.value : [])).find((l) => typeof l.samples_per_second === "number");
    if (line) return line;
    // The rank that failed first says why (gloo's enforce); the others only lost their peer.
    const reasons = settled.flatMap((x) => (x.status === "rejected" ? [x.reason as unknown] : []));
    throw reasons.find((e) => /enforce|Assertion/.test(String(e))) ?? reasons[0];
  } finally {
    clearTimeout(straggling);
  }
}

/** What a failed run printed, the last line that says why (DDP's PowerSGD hook aborts on gloo in torch 1.13). */
function why(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // A stack frame ("at emitErrorNT ...") names a function, not the reason.
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => !l.startsWith("at ") && /Error|error|enforce|Assertion/.test(l));
  return (lines[lines.length - 1] ?? text.split("\n")[0] ?? "failed").slice(0, 300);
}

async function measureLink(link: Link, torchGone: string | null, rows: Map<string, Row>): Promise<void> {
  // The driver, the workers, and a parameter server's host.
  const hosts = NamespaceHosts.up(WORKERS + 2, link);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const model of MODELS) {
        // A parameter server's link carries every worker's pull and push: 180 MB a step for the 11.4M MLP, 15 s at 100 Mbit/s.
        const variants = MESHTRAIN.filter((v) => !(v.startsWith("ps-") && model === "mlp10m" && link.bitsPerSecond < 1e9));
        const jobs: Array<[string, string, () => Promise<Json>]> = [
          ...variants.map((v): [string, string, () => Promise<Json>] => ["meshtrain", v, () => meshtrain(hosts, model, v)]),
          ...(torchGone ? [] : DDP.map((c): [string, string, () => Promise<Json>] => ["pytorch-ddp", c === "none" ? "float32" : c, () => ddp(hosts, model, c)])),
        ];
        for (const [peer, variant, job] of jobs) {
          const key = `${link.rate}/${model}/${peer}/${variant}`;
          const row = rows.get(key) ?? { link: link.name, model, peer, variant, runs: [], samplesPerSecond: NaN, predicted: null, sentBytesPerStep: null, failures: [] };
          rows.set(key, row);
          let outcome: string;
          try {
            const r = await job();
            row.runs.push(r.samples_per_second as number);
            const predicted = typeof r.predicted_samples_per_second === "number" ? r.predicted_samples_per_second : null;
            if (peer === "meshtrain") (row.rounds ??= []).push({ measured: r.samples_per_second as number, predicted, computeMs: numberOr(r.compute_ms), predictedComputeMs: numberOr(r.predicted_compute_ms) });
            const predictions = (row.rounds ?? []).flatMap((d) => (d.predicted !== null ? [d.predicted] : []));
            if (predictions.length > 0) row.predicted = median(predictions);
            if (typeof r.predicted_timed === "boolean") row.timed = r.predicted_timed;
            if (typeof r.sent_bytes_per_step === "number") row.sentBytesPerStep = r.sent_bytes_per_step;
            outcome = fmt(r.samples_per_second as number, 1);
          } catch (err) {
            // Every round tries again: the median is of the runs that finished, and the row says how many failed and why.
            row.failures.push((outcome = why(err)));
          }
          process.stderr.write(`${link.name} round ${round + 1}/${ROUNDS}: ${NAMES[model]} ${peer} ${variant}: ${outcome}\n`);
        }
      }
    }
  } finally {
    hosts.down();
  }
}

const numberOr = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

function table(rows: Row[]): string[] {
  const out = ["| link | model | peer | variant | samples/s | predicted | predicted / measured | compute, measured / predicted | MB sent per worker per step | vs its float32 | vs DDP float32 | vs DDP fp16 |", "|---|---|---|---|---|---|---|---|---|---|---|---|"];
  // Links fastest first, then models, peers and variants in the order runs make them (merged parts included).
  const at = (list: readonly string[], x: string): number => (list.indexOf(x) + 1 || list.length + 1);
  const variants = ["float32", "websocket", "fp16", "bf16", "powersgd-4", "sync-8", "ps-sync", "ps-async", "powersgd"];
  const key = (r: Row): number[] => [at(LINKS.map((l) => l.name), r.link), at(Object.keys(NAMES), r.model), at(["meshtrain", "pytorch-ddp"], r.peer), at(variants, r.variant)];
  const sorted = [...rows].sort((a, b) => key(a).reduce((d, v, i) => d || v - key(b)[i]!, 0));
  for (const r of sorted) {
    // A row whose runs all failed has no rate (null, once through the JSON of merged results).
    const sps = Number.isFinite(r.samplesPerSecond) ? r.samplesPerSecond : NaN;
    const same = (peer: string, variant: string) => rows.find((x) => x.link === r.link && x.model === r.model && x.peer === peer && x.variant === variant)?.samplesPerSecond ?? NaN;
    const own = same(r.peer, "float32");
    const pred = r.predicted !== null ? `${fmt(r.predicted, 0)}${r.timed === false ? " (FLOPs)" : ""}` : "-";
    const over = predictedOver(r, sps);
    const ratio = over !== null ? fmt(over) : "-";
    const compute = computeOver(r);
    // Zero: a run whose records carried no bytes (async parameter servers' rounds did not, before 2026-11-26).
    const mb = r.sentBytesPerStep ? fmt(r.sentBytesPerStep / 1e6, 2) : "-";
    const failed = r.failures.length > 0 ? `${r.runs.length > 0 ? `${fmt(r.samplesPerSecond, 1)}; ` : ""}${r.failures.length} of ${r.failures.length + r.runs.length} run(s) failed: ${r.failures[r.failures.length - 1]!.replace(/\|/g, "/")}` : null;
    const rate = failed ?? fmt(r.samplesPerSecond, 1);
    out.push(`| ${r.link} | ${NAMES[r.model]} | ${r.peer} | ${r.variant} | ${rate} | ${pred} | ${ratio} | ${compute !== null ? fmt(compute) : "-"} | ${mb} | ${fmt(sps / own)} | ${fmt(sps / same("pytorch-ddp", "float32"))} | ${fmt(sps / same("pytorch-ddp", "fp16"))} |`);
  }
  return out;
}

async function main(): Promise<void> {
  const missing = NamespaceHosts.missing();
  const heading = `### Between machines: ${WORKERS} namespace hosts on shaped links, ${BATCH} samples per worker per step, SGD (medians of ${ROUNDS} interleaved rounds)`;
  if (missing) {
    writeResults(NAME, { machine: machine(), quick: QUICK, rows: [], missing }, `${heading}\n\nNot measured: ${missing}.\nCommand: \`npm run bench:network\`.`);
    return;
  }
  const torchGone = torchMissing();
  const delay = NamespaceHosts.delayMissing();
  if (process.argv.includes("--from-json")) {
    // The tables again from the last run's results, measuring nothing (after a change to how they are written).
    const last = JSON.parse(fs.readFileSync(path.join(RESULTS, `${NAME}.json`), "utf8")) as { rows: Row[]; accuracy: AccuracyRow[] };
    report(heading, last.rows, last.accuracy.length > 0 ? { rows: last.accuracy, markdown: accuracyTable(last.accuracy, LINKS_RUN[LINKS_RUN.length - 1]!, WORKERS) } : null, torchGone, delay, null);
    return;
  }
  const byKey = new Map<string, Row>();
  // A run of some links or models (--links, --models) replaces those rows of the last results and keeps the rest.
  const last = PARTS ? lastResults() : null;
  const measured = (r: Row): boolean => LINKS_RUN.some((l) => l.name === r.link) && MODELS.includes(r.model) && (!VARIANTS || (r.peer === "meshtrain" && VARIANTS.includes(r.variant)));
  const rowsNow = (): Row[] => [...(last?.rows.filter((r) => !measured(r)) ?? []), ...[...byKey.values()].map((r) => ({ ...r, samplesPerSecond: median(r.runs) }))];
  // Written after each link too: a run that fails later keeps what it measured.
  for (const link of LINKS_RUN) {
    await measureLink(link, torchGone, byKey);
    report(heading, rowsNow(), null, torchGone, delay, `links measured so far: up to ${link.name}`);
  }
  // Accuracy on the slowest link measured (where talking less matters most), unless --accuracy none.
  const accuracyLink = arg("--accuracy") === "none" ? undefined : LINKS_RUN[LINKS_RUN.length - 1];
  const kept = last && last.accuracy.length > 0 ? { rows: last.accuracy, markdown: accuracyTable(last.accuracy, LINKS[LINKS.length - 1]!, WORKERS) } : null;
  const accuracy = accuracyLink ? await measureAccuracy(accuracyLink, WORKERS) : kept;
  report(heading, rowsNow(), accuracy, torchGone, delay, null);
}

/**
 * The last full-size run's results, where there are some. A partial run keeps their other rows
 * under its own machine, so they must come from the same kind of CPU: else it stops before
 * measuring, rather than make one table of two machines.
 */
function lastResults(): { rows: Row[]; accuracy: AccuracyRow[] } | null {
  let r: { rows: Row[]; accuracy: AccuracyRow[]; quick?: boolean; machine?: Json };
  try {
    r = JSON.parse(fs.readFileSync(path.join(RESULTS, `${NAME}.json`), "utf8")) as typeof r;
  } catch {
    return null;
  }
  if (r.quick) return null;
  const [there, here] = [kindOf(r.machine as Parameters<typeof kindOf>[0]), kindOf(machine() as Parameters<typeof kindOf>[0])];
  if (there !== here) throw new Error(`--links/--models/--variants keep the other rows of bench/results/${NAME}.json, which ran on ${there}; this machine is ${here}. Run the whole bench:network here, or move that file away first.`);
  return r;
}

function report(heading: string, rows: Row[], accuracy: Awaited<ReturnType<typeof measureAccuracy>> | null, torchGone: string | null, delay: string | null, partial: string | null): void {
  const md = [
    heading,
    ...(partial ? ["", `Partial: ${partial}.`] : []),
    "",
    ...table(rows),
    "",
    `Hosts are Linux network namespaces on this one machine (${os.cpus().length} cores): the driver on one, each worker on its own, pinned to ${WORKERS > os.cpus().length ? `core (rank mod ${os.cpus().length}): ${WORKERS} workers share ${os.cpus().length} cores` : "its own core"}; every host's link to a bridge is limited in both directions by tc's token bucket (tbf), which holds 1 ms at the link's rate (a wire banks nothing while idle; a bigger bucket let a step's first bytes through at once after its compute). They share the machine's cores and memory bandwidth: what differs from real machines is that, and no propagation delay (${delay ? `this kernel has no netem: ${delay}` : "netem is there, but this run added no delay"}).`,
    "meshtrain: strategy(\"data\", { feed: \"workers\" }) on a join() cluster; float32 over the native data plane (websocket: over the WebSocket links), fp16 (16-bit with error feedback), powersgd-4 (compression { name: \"powersgd\", rank: 4 }), sync-8 (sync { every: 8 }, DiLoCo's outer Nesterov momentum: it trains differently, so its samples/s are not the same work as the others'; measured over whole sync periods after the first, at least 3 periods); ps-sync and ps-async: strategy(\"ps\") with one parameter server on a host of its own (the driver sends the data; MB sent: a worker's pushes). Predicted: the plan's samples/s from the ring probe over these links and the replica's step fit() times on a worker before it trains (marked (FLOPs) where it could not: from the model's FLOPs and the worker's matrix speed), the median of the runs' plans; predicted / measured: the median of each run's own plan over that run's samples/s (rows measured before 2026-11-29: the last run's plan over the median); compute, measured / predicted: the slowest worker's median forward, backward and update over its plan's, the same way (a miss with this near 1 is in the rest of the step: the all-reduce, waits, the step's messages). Steps per run: the small MLP 60, the CNN 16, the 11.4M MLP 14. MB sent: what one worker sent per step (ring frames and headers), averaged over the measured steps.",
    "DDP: torch's DistributedDataParallel on gloo over the same links (float32; its fp16_compress_hook; its powerSGD_hook at rank 4). A failed row says what it printed.",
    ...(torchGone ? [`DDP: not measured: ${torchGone}.`] : []),
    ...(accuracy ? ["", ...accuracy.markdown] : []),
    "",
    "Command: `npm run bench:network` (`-- --links 1gbit,100mbit --models mlp10m --variants fp16,ps-sync --rounds 3 --accuracy none` picks parts, which replace those rows of the last results and keep the rest; `-- --links 100mbit --models none` runs the accuracy table alone).",
  ].join("\n");
  writeResults(NAME, { machine: machine(), quick: QUICK, delay: delay ?? "netem", rows, accuracy: accuracy?.rows ?? [], ...(partial ? { partial } : {}) }, md, { key: (r) => `${String(r.link)}, ${String(r.model)}, ${String(r.variant)}`, measures: ["samplesPerSecond"], include: (r) => r.peer === "meshtrain" });
}

main().catch((err: unknown) => {
  NamespaceHosts.clean();
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
