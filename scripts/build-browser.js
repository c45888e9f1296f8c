#!/usr/bin/env node
// Builds the browser worker (the page a tab opens from the driver's invite link) from the SDK's
// own worker code: the page's script (TF.js, the host and its roles) and its communication
// thread (a Web Worker running the same session code as a Node worker's). Where a module has a
// browser counterpart beside it (name.browser.ts), the bundle takes that one: a tab has no
// native addon, no /proc, no sockets to listen on.
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const esbuild = require("esbuild");

const root = path.join(__dirname, "..");
const out = path.join(root, "dist", "sdk", "worker", "browser");

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

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const common = {
    bundle: true,
    platform: "browser",
    format: "iife",
    target: ["chrome113", "firefox121", "safari17"],
    minify: true,
    sourcemap: true,
    legalComments: "none",
    inject: [path.join(root, "sdk", "worker", "browser", "node-globals.ts")],
    plugins: [browserVariants],
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
  };
  await esbuild.build({ ...common, entryPoints: { page: path.join(root, "sdk", "worker", "browser", "page.ts") }, outdir: out });
  await esbuild.build({ ...common, entryPoints: { comm: path.join(root, "sdk", "worker", "browser", "comm-entry.ts") }, outdir: out });
}

main().catch((err) => {
  console.error(err.message ?? err);
  process.exit(1);
});
