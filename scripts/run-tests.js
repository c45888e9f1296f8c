#!/usr/bin/env node
// Runs the compiled tests with Node's own runner: unit tests two files at a time; then the
// integration and notebook files (real worker processes over real WebSockets, real kernels) in
// two lanes at once; then, one at a time, the files that need the machine to themselves.
//
// Two at a time, although machines here have 2 cores: one file at a time kept them about 85%
// busy (1.66-1.73 cores, /proc/stat), the rest being waits (processes starting, heartbeats, a
// kernel's round trips). Three small files took 260-310 s one at a time and 131-214 s two at a
// time (`node --test --test-concurrency=1|2`, interleaved, twice), but with another run loading
// the machine; on a machine already saturated, two lanes do the same work per minute as one.
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
/** "checks": the import-cycle check, the API docs (TypeDoc's warnings are errors) and the formatting (prettier), run beside the unit tests. */
const suites = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["checks", "unit", "integration", "notebooks"];

/**
 * Files that hold a bound on the wall clock (a heartbeat timeout, a stall report, a slowed
 * worker's share of the last places), find processes by their command line, or use fixed ports
 * and network namespaces: another file beside them would break what they measure.
 */
const ALONE = new Set([
  "bench-network", "faults", "interrupt", "kill-and-freeze", "multi-host", "parameter-servers",
  "readme-hosts", "slurm", "ssh", "stall",
]);

/**
 * Seconds each file took in the last run that ran it (this machine's or a committed one's): the
 * two lanes take the longest files first, each the next as it comes free, so both end near the
 * same time. A file not timed yet counts as DEFAULT_SECONDS. Every run writes the times back.
 */
const TIMES_FILE = path.join(root, "test", "file-times.json");
const DEFAULT_SECONDS = 60;
const times = fs.existsSync(TIMES_FILE) ? JSON.parse(fs.readFileSync(TIMES_FILE, "utf8")) : {};

function files(dir) {
  const abs = path.join(root, "dist", "test", dir);
  if (!fs.existsSync(abs)) {
    console.error(`no compiled tests in ${abs}: run npm run build first`);
    process.exit(2);
  }
  return fs.readdirSync(abs).filter((f) => f.endsWith(".test.js")).sort().map((f) => path.join(abs, f));
}

const nameOf = (file) => path.basename(file, ".test.js");
const cost = (file) => times[nameOf(file)] ?? DEFAULT_SECONDS;

/**
 * What failed, printed again at the very end: CI keeps only the tail of a run's output, and a
 * failure in an early lane would otherwise leave no trace there. A test file's is the spec
 * reporter's "failing tests" section; another command's (the checks), its last 40 lines.
 */
const failures = [];

/** Runs `command`; true if it exits 0. Its lines are prefixed with `tag` when others share the output (null: none). */
function runChild(command, args, tag, label) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], cwd: root });
    const kept = { inFailing: false, lines: [], tail: [] };
    prefixLines(child.stdout, process.stdout, tag, kept);
    prefixLines(child.stderr, process.stderr, tag, kept);
    child.on("close", (code) => {
      if (code !== 0) failures.push({ label, code, lines: kept.lines.length > 0 ? kept.lines : kept.tail });
      resolve(code === 0);
    });
  });
}

/** One `node --test` over `list`, `concurrency` files at a time. */
function lane(list, concurrency, tag, label) {
  // Given no files, `node --test` would run every test file it finds under the working directory.
  if (list.length === 0) return Promise.resolve(true);
  // --test-force-exit: a file whose tests have all ended exits even if something it started still
  // holds its event loop (a leaked child's pipes once kept CI waiting until its 90 minutes ran out).
  return runChild(process.execPath, ["--test", "--test-force-exit", "--test-reporter=spec", `--test-concurrency=${concurrency}`, ...list], tag, label);
}

function prefixLines(from, to, tag, kept) {
  let rest = "";
  const write = (lines) => {
    if (lines.length === 0) return;
    to.write(lines.map((l) => (tag ? `${tag} ${l}\n` : `${l}\n`)).join(""));
    for (const l of lines) keepFailing(kept, l);
  };
  from.setEncoding("utf8");
  from.on("data", (chunk) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop();
    write(lines);
  });
  from.on("end", () => rest && write([rest]));
}

/** Keeps the lines of the reporter's closing "failing tests:" section (the first 200 of them), and the last 40 lines. */
function keepFailing(kept, line) {
  kept.tail.push(line.replace(/\x1b\[[0-9;]*m/g, ""));
  if (kept.tail.length > 40) kept.tail.shift();
  if (/^\S*\s*✖ failing tests:/.test(line)) kept.inFailing = true;
  // Node's own frames say nothing about the failure and would crowd out the next one.
  else if (kept.inFailing && kept.lines.length < 200 && !/\(node:|at node:/.test(line)) kept.lines.push(line);
}

/**
 * `list` run by `n` lanes at once, each a file at a time in its own `node --test`, longest first,
 * each lane taking the next file as it comes free; each file's seconds recorded.
 */
async function lanes(title, list, n) {
  if (list.length === 0) return true;
  const queue = [...list].sort((a, b) => cost(b) - cost(a));
  console.log(`\n== ${title}: ${list.length} files in ${n} lanes, longest first (${Math.round(queue.reduce((t, f) => t + cost(f), 0))} s recorded) ==`);
  const t0 = Date.now();
  const lanePass = async (i) => {
    const tag = `[${"ab"[i]}]`;
    let ok = true;
    for (let f = queue.shift(); f; f = queue.shift()) ok = (await timedFile(f, tag)) && ok;
    console.log(`${tag} lane ended after ${seconds(t0)}`);
    return ok;
  };
  const ok = await Promise.all(Array.from({ length: n }, (_, i) => lanePass(i)));
  return ok.every(Boolean);
}

/** One file in its own `node --test`, its wall time recorded. */
async function timedFile(file, tag) {
  const t0 = Date.now();
  const ok = await lane([file], 1, tag, `${nameOf(file)} (lane ${tag})`);
  times[nameOf(file)] = Math.round((Date.now() - t0) / 100) / 10;
  console.log(`${tag} ${nameOf(file)}: ${ok ? "passed" : "FAILED"} in ${seconds(t0)}`);
  return ok;
}

/** The files' times written back, sorted by name (kept in git: a fresh machine's lanes start balanced). */
function saveTimes() {
  const sorted = Object.fromEntries(Object.keys(times).sort().map((k) => [k, times[k]]));
  fs.writeFileSync(TIMES_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
}

/** `npm run <script>` for each of `scripts` in turn, its output prefixed; true if all passed. */
async function npmScripts(scripts, tag) {
  for (const script of scripts) {
    const ok = await runChild("npm", ["run", "--silent", script], tag, `npm run ${script}`);
    console.log(`${tag} npm run ${script}: ${ok ? "passed" : "FAILED"}`);
    if (!ok) return false;
  }
  return true;
}

/** Wall time since `t0`, for the log: when CI runs out of time, its log says which phase took it. */
const seconds = (t0) => `${Math.round((Date.now() - t0) / 1000)} s`;

async function main() {
  const start = Date.now();
  let ok = true;
  const header = (title, list, concurrency) => console.log(`\n== ${title}: ${list.length} files, ${concurrency} at a time ==`);
  // Minutes each on a slow machine, mostly one core's: beside the unit tests rather than before them.
  const checks = suites.includes("checks") ? npmScripts(["test:cycles", "docs:api", "format:check"], "[checks]") : Promise.resolve(true);
  if (suites.includes("unit")) {
    const unit = files("unit");
    header("unit", unit, 2);
    ok = (await lane(unit, 2, null, "unit tests")) && ok;
    console.log(`== unit tests ended after ${seconds(start)} ==`);
  }
  ok = (await checks) && ok;
  const rest = suites.filter((s) => s !== "unit" && s !== "checks");
  const slow = rest.flatMap(files);
  ok = (await lanes(rest.join(" and "), slow.filter((f) => !ALONE.has(nameOf(f))), 2)) && ok;
  const alone = slow.filter((f) => ALONE.has(nameOf(f)));
  if (alone.length > 0) {
    header("alone", alone, 1);
    for (const f of alone) ok = (await timedFile(f, "[alone]")) && ok;
  }
  saveTimes();
  console.log(`== all tests ended after ${seconds(start)} ==`);
  for (const f of failures) {
    console.log(`\n== FAILED: ${f.label} (exit ${f.code}) ==`);
    for (const l of f.lines) console.log(l);
  }
  process.exit(ok ? 0 : 1);
}

void main();
