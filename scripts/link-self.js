#!/usr/bin/env node
// Makes `import ... from "meshtrain"` (and "meshtrain/notebook") resolve inside this repository,
// as it does in a project that installed meshtrain: notebooks here import the SDK by name.
// node_modules/meshtrain -> .. (npm ci recreates node_modules; prepare runs this again).
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const link = path.join(root, "node_modules", "meshtrain");
try {
  const st = fs.lstatSync(link);
  if (st.isSymbolicLink() && path.resolve(path.dirname(link), fs.readlinkSync(link)) === root) process.exit(0);
  fs.rmSync(link, { recursive: true, force: true });
} catch {
  // Not there yet.
}
fs.mkdirSync(path.dirname(link), { recursive: true });
fs.symlinkSync("..", link, "dir");
