#!/usr/bin/env node
// Builds the worker bundle's JavaScript (what `meshtrain bundle` packs for hosts that have only
// Node): the worker program and its communication thread, each one file holding the SDK's
// worker side and the parts of TF.js it runs, into dist/worker-bundle/. Where a module has a
// bundle counterpart beside it (name.bundle.ts), the bundle takes that one: it finds its native
// addon beside itself, not in the package. Packages with binaries of their own (tfjs-node,
// Dawn's webgpu) stay out of the JavaScript: `meshtrain bundle --backends ...,webgpu` puts Dawn's
// package for this platform beside it, where the adapter probe (probe-main.js) and the worker
// require it; TF.js's webgpu backend (JavaScript only) is inside, sharing the worker's TF.js.
// Not minified: a worker's stack trace should read as the source does.
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const esbuild = require("esbuild");

const root = path.join(__dirname, "..");
const out = path.join(root, "dist", "worker-bundle");

/** name.ts -> name.bundle.ts where one exists (relative imports inside sdk/ and bench/ only). */
const bundleVariants = {
  name: "bundle-variants",
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (![path.join(root, "sdk"), path.join(root, "bench")].some((d) => args.importer.startsWith(d))) return undefined;
      const variant = `${path.resolve(args.resolveDir, args.path)}.bundle.ts`;
      return fs.existsSync(variant) ? { path: variant } : undefined;
    });
  },
};

async function main() {
  fs.rmSync(out, { recursive: true, force: true });
  const common = {
    bundle: true,
    platform: "node",
    format: "cjs",
    target: ["node20"],
    sourcemap: false,
    legalComments: "none",
    logLevel: "warning",
    plugins: [bundleVariants],
    external: ["@tensorflow/tfjs-node", "@tensorflow/tfjs-node-gpu", "webgpu", "bufferutil", "utf-8-validate"],
    define: { "process.env.NODE_ENV": '"production"' },
  };
  await esbuild.build({ ...common, entryPoints: [path.join(root, "sdk", "cli", "worker-bundle-main.ts")], outfile: path.join(out, "meshtrain-worker.js") });
  await esbuild.build({ ...common, entryPoints: [path.join(root, "sdk", "worker", "comm", "entry.ts")], outfile: path.join(out, "comm", "entry.js") });
  // Beside the worker program: discover.ts starts it from its own folder.
  await esbuild.build({ ...common, entryPoints: [path.join(root, "sdk", "backends", "webgpu", "probe-main.ts")], outfile: path.join(out, "probe-main.js") });
  // `node meshtrain-worker.js bench`: bench:gpu and the two programs it starts, in the folders it
  // starts them from, and the local worker its 2-worker rows fork (local-entry.bundle.ts).
  await esbuild.build({ ...common, entryPoints: [path.join(root, "sdk", "worker", "local-main.ts")], outfile: path.join(out, "local-main.js") });
  for (const b of [["gpu", "run"], ["gpu", "cluster-fit"], ["train", "tfjs-train"]]) {
    // The driver's SDK comes along; what it resolves only for notebooks and for making bundles stays out.
    const external = [...common.external, "plotly.js-dist-min/*", "@tensorflow/tfjs-backend-wasm/package.json"];
    await esbuild.build({ ...common, external, entryPoints: [path.join(root, "bench", ...b) + ".ts"], outfile: path.join(out, "bench", b[0], `${b[1]}.js`) });
  }
}

main().catch((err) => {
  console.error(err.message ?? err);
  process.exit(1);
});
