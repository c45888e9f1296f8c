#!/usr/bin/env node
// Builds meshtrain's native CPU kernels (native/src/*.c, plain N-API C over OpenBLAS) into
// native/build/meshtrain_native.node, as part of `npm install`. It never fails the install:
// without a compiler, Node's headers or OpenBLAS it writes the reason to native/build/status.json,
// and workers say it once and use the wasm backend with meshtrain's kernels instead.
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

//
// `--portable`: for any x86-64 CPU, not only this one's instructions (the worker bundle's
// prebuilt addon, built on one machine for others). `--out-dir DIR`: build there instead of
// native/build (the bundle's own copy, or a worker rebuilding it on its host).
const root = path.join(__dirname, "..");
const src = path.join(root, "native", "src");
const flag = (name) => process.argv.indexOf(name);
const portable = flag("--portable") >= 0;
const out = flag("--out-dir") >= 0 ? path.resolve(process.argv[flag("--out-dir") + 1]) : path.join(root, "native", "build");
const target = path.join(out, "meshtrain_native.node");
fs.mkdirSync(out, { recursive: true });

function report(status) {
  fs.writeFileSync(path.join(out, "status.json"), `${JSON.stringify({ ...status, node: process.version, builtAt: new Date().toISOString() }, null, 2)}\n`);
  const line = status.ok
    ? `meshtrain: built native CPU kernels (${status.compiler}, OpenBLAS${portable ? ", portable" : ""}) -> ${path.relative(root, target)}`
    : `meshtrain: native CPU kernels not built: ${status.reason}\nmeshtrain: workers will use the wasm backend with meshtrain's kernels instead (slower).`;
  console.log(line);
}

// Node's headers sit beside its binary (<prefix>/bin/node -> <prefix>/include/node).
function nodeHeaders() {
  const candidates = [
    path.join(path.dirname(path.dirname(process.execPath)), "include", "node"),
    process.env.npm_config_nodedir && path.join(process.env.npm_config_nodedir, "include", "node"),
    "/usr/include/node",
    "/usr/local/include/node",
  ].filter(Boolean);
  return candidates.find((dir) => fs.existsSync(path.join(dir, "node_api.h")));
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout || ""}${r.stderr || ""}${r.error ? r.error.message : ""}` };
}

function main() {
  if (process.env.MESHTRAIN_SKIP_NATIVE) return report({ ok: false, reason: "MESHTRAIN_SKIP_NATIVE is set" });
  const headers = nodeHeaders();
  if (!headers) return report({ ok: false, reason: `Node's headers (node_api.h) were not found beside ${process.execPath}` });
  const cc = process.env.CC || "cc";
  if (!run(cc, ["--version"]).ok) return report({ ok: false, reason: `no C compiler (${cc}); install gcc (apt-get install build-essential)` });
  const sources = fs.readdirSync(src).filter((f) => f.endsWith(".c")).map((f) => path.join(src, f));
  const common = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared", "-Wall", "-DNODE_GYP_MODULE_NAME=meshtrain_native", `-I${headers}`, ...sources, "-o", target, "-lopenblas", "-lm"];
  // The addon is built on the machine that runs it, so it may use all of that CPU's instructions.
  let r = portable ? { ok: false } : run(cc, ["-march=native", ...common]);
  if (!r.ok) r = run(cc, common);
  if (!r.ok) {
    const noBlas = /lopenblas|cannot find -l/.test(r.out);
    return report({
      ok: false,
      reason: noBlas ? "OpenBLAS was not found (apt-get install libopenblas-dev)" : `the compiler failed: ${r.out.split("\n").slice(0, 5).join(" | ")}`,
    });
  }
  const check = spawnSync(process.execPath, ["-e", `const m = require(${JSON.stringify(target)}); if (typeof m.batchMatMul !== "function") process.exit(1);`], { encoding: "utf8" });
  if (check.status !== 0) return report({ ok: false, reason: `the built addon did not load: ${(check.stderr || "").split("\n")[0]}` });
  report({ ok: true, compiler: run(cc, ["--version"]).out.split("\n")[0] });
}

main();
