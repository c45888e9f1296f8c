#!/usr/bin/env node
// tsc writes dist/sdk/cli/main.js without the execute bit, and `npx meshtrain` inside this
// repository runs it through the node_modules/meshtrain self-link, which npm never chmods (a
// registry install does). Without this, a fresh `npm ci` gives "meshtrain: Permission denied".
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const pkg = require("../package.json");
for (const rel of Object.values(pkg.bin)) {
  const file = path.join(__dirname, "..", rel);
  fs.chmodSync(file, fs.statSync(file).mode | 0o111);
}
