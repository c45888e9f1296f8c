#!/usr/bin/env node
// Builds the browser worker (the page a tab opens from the driver's invite link) from the SDK's
// own worker code: the page's script (TF.js, the host and its roles) and its communication
// thread (a Web Worker running the same session code as a Node worker's). Where a module has a
// browser counterpart beside it (name.browser.ts), the bundle takes that one: a tab has no
// native addon, no /proc, no sockets to listen on.
//
// Custom layers: a tab builds models from the classes its page was built with, never from code
// sent to it. MESHTRAIN_PAGE_MODULES=./layers.js,./more.js bundles those files (each registering
// its classes with tf.serialization.registerClass) into the page, ahead of the worker's code;
// `--out <dir>` writes that page elsewhere, and a driver started with MESHTRAIN_WORKER_PAGE=<dir>
// serves it instead of the one npm run build made.
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const esbuild = require("esbuild");

const root = path.join(__dirname, "..");
const outFlag = process.argv.indexOf("--out");
const out = outFlag >= 0 && process.argv[outFlag + 1] ? path.resolve(process.argv[outFlag + 1]) : path.join(root, "dist", "sdk", "worker", "browser");

/** name.ts -> name.browser.ts where one exists (relative imports inside sdk/ only). */
const browserVariants = {
  name: "browser-variants",
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!args.importer.startsWith(path.join(root, "sdk"))) return undefined;
      const base = path.resolve(args.resolveDir, args.path);
      const variant = `${base}.browser.ts`;
      return fs.existsSync(variant) ? { path: variant } : undefined;
    });
    // A Node built-in reached from the bundle is a module without a browser counterpart: name it.
    build.onResolve({ filter: /^node:/ }, (args) => ({ errors: [{ text: `${args.path} imported by ${path.relative(root, args.importer)}: give that module a .browser.ts counterpart` }] }));
  },
};

/** The page's entry: the user's modules first (their classes registered before any model is built), then the page. */
function pageEntry() {
  const page = path.join(root, "sdk", "worker", "browser", "page.ts");
  const modules = (process.env.MESHTRAIN_PAGE_MODULES ?? "").split(",").filter(Boolean).map((f) => path.resolve(f));
  for (const m of modules) if (!fs.existsSync(m)) throw new Error(`MESHTRAIN_PAGE_MODULES names ${m}, which does not exist`);
  if (modules.length > 0) console.log(`worker page built with ${modules.join(", ")}`);
  const contents = [...modules, page].map((f) => `import ${JSON.stringify(f)};`).join("\n");
  return { stdin: { contents, resolveDir: root, sourcefile: "page-entry.ts", loader: "ts" } };
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const common = {
    bundle: true,
    platform: "browser",
    format: "iife",
    target: ["chrome113", "firefox121", "safari17"],
    minify: true,
    // No source maps: they would add 12 MB to the package for stack traces in a tab.
    sourcemap: false,
    legalComments: "none",
    inject: [path.join(root, "sdk", "worker", "browser", "node-globals.ts")],
    plugins: [browserVariants],
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
    // One TF.js in the page: a user's module registers its classes with the copy the worker uses.
    alias: { "@tensorflow/tfjs": path.dirname(require.resolve("@tensorflow/tfjs/package.json")) },
  };
  await esbuild.build({ ...common, ...pageEntry(), outfile: path.join(out, "page.js") });
  await esbuild.build({ ...common, entryPoints: { comm: path.join(root, "sdk", "worker", "browser", "comm-entry.ts") }, outdir: out });
}

main().catch((err) => {
  console.error(err.message ?? err);
  process.exit(1);
});
