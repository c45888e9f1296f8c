import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

/**
 * npm 11 skips a dependency's install scripts unless package.json's allowScripts names it, and
 * warns about each one it skipped. Every installed package with such a script is decided there:
 * allowed where meshtrain needs it (zeromq's check of its prebuilt addon, the kernel's socket;
 * webgpu's; esbuild's binary; TF.js's node backends, which fetch libtensorflow), refused where it
 * only prints (core-js's banner).
 */
const ROOT = path.join(__dirname, "..", "..", "..");

function installedWithScripts(dir = path.join(ROOT, "node_modules")): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
    const at = path.join(dir, entry.name);
    if (entry.name.startsWith("@")) {
      found.push(...installedWithScripts(at));
      continue;
    }
    const file = path.join(at, "package.json");
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, "utf8")) as { name?: string; scripts?: Record<string, string> };
      if (pkg.name && ["preinstall", "install", "postinstall"].some((s) => pkg.scripts?.[s])) found.push(pkg.name);
    }
    const nested = path.join(at, "node_modules");
    if (fs.existsSync(nested)) found.push(...installedWithScripts(nested));
  }
  return found;
}

test("every installed dependency with an install script is allowed or refused in package.json's allowScripts", () => {
  const own = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { name: string; allowScripts?: Record<string, boolean> };
  const decided = new Set(Object.keys(own.allowScripts ?? {}));
  const undecided = [...new Set(installedWithScripts())].filter((n) => n !== own.name && !decided.has(n)).sort();
  assert.deepEqual(undecided, [], "npm install would warn about these; decide each in package.json's allowScripts");
  assert.equal(own.allowScripts?.zeromq, true, "the kernel's sockets");
});
