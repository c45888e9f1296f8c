#!/usr/bin/env node
// Runs the compiled tests with Node's own runner: unit tests in parallel, then integration tests
// (real worker processes over real WebSockets) one file at a time, because machines here have 2 cores.
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const suites = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["unit", "integration", "notebooks"];

function files(dir) {
  const abs = path.join(root, "dist", "test", dir);
  if (!fs.existsSync(abs)) {
    console.error(`no compiled tests in ${abs}: run npm run build first`);
    process.exit(2);
  }
  return fs.readdirSync(abs).filter((f) => f.endsWith(".test.js")).sort().map((f) => path.join(abs, f));
}

let failed = false;
for (const suite of suites) {
  const list = files(suite);
  const concurrency = suite === "unit" ? "2" : "1";
  // Notebooks run one long test each; node's default per-test timeout is infinite, ours are set in the tests.
  console.log(`\n== ${suite}: ${list.length} files ==`);
  const r = spawnSync(process.execPath, ["--test", "--test-reporter=spec", `--test-concurrency=${concurrency}`, ...list], { stdio: "inherit", cwd: root });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
