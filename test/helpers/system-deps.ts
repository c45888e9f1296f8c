import { spawnSync } from "node:child_process";
import * as fs from "node:fs";

export const PYTHON = fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";

function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/**
 * Makes sure Debian packages are installed: checks with `check`; if it fails and this is root
 * with apt-get, installs them; otherwise throws with the exact command to run. Never skips.
 */
export function ensureDebianPackages(what: string, packages: string[], check: () => boolean): void {
  if (check()) return;
  const command = `apt-get update && apt-get install -y --no-install-recommends ${packages.join(" ")}`;
  if (isRoot() && fs.existsSync("/usr/bin/apt-get")) {
    const r = spawnSync("sh", ["-c", `DEBIAN_FRONTEND=noninteractive ${command}`], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    if (r.status === 0 && check()) return;
    throw new Error(`installing ${what} failed:\n${r.stderr.slice(-2000)}\nrun as root: ${command}`);
  }
  throw new Error(`${what} is missing and this process cannot install it; run as root:\n  ${command}`);
}

export function jupyterReady(): boolean {
  return spawnSync(PYTHON, ["-c", "import nbclient, nbconvert, nbformat, jupyter_client"], { stdio: "ignore" }).status === 0;
}

export function chromiumPath(): string | null {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (fs.existsSync(p)) return p;
  return null;
}
