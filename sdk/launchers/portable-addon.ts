import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { userCache } from "./user-cache";

const PACKAGE_ROOT = path.join(__dirname, "..", "..", "..");

/**
 * The native addon built for any x86-64 CPU of this platform (`build-native.js --portable`), as
 * bundles carry it: built once per source, Node and platform, and kept in the user's cache
 * (~/.cache/meshtrain/addons/<key>), since compiling it is most of what making a bundle costs
 * (12.7 of 14.2 s here). Returns its folder, or why it could not be built (not kept: a compiler
 * installed later should be used).
 */
export function portableAddon(): { dir: string } | { reason: string } {
  const src = path.join(PACKAGE_ROOT, "native", "src");
  const script = path.join(PACKAGE_ROOT, "scripts", "build-native.js");
  const h = createHash("sha256").update(`${process.version} ${process.platform}-${process.arch}\n`);
  for (const f of [
    ...fs
      .readdirSync(src)
      .sort()
      .map((n) => path.join(src, n)),
    script,
  ])
    h.update(`${path.basename(f)}\n`).update(fs.readFileSync(f));
  const dir = path.join(userCache("addons"), h.digest("hex").slice(0, 24));
  if (fs.existsSync(path.join(dir, "meshtrain_native.node"))) return { dir };
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // Built beside its place and moved in: two bundles made at once never see half an addon.
  const tmp = fs.mkdtempSync(`${dir}.partial-`);
  try {
    const r = spawnSync(process.execPath, [script, "--portable", "--out-dir", tmp], {
      encoding: "utf8",
      timeout: 300_000,
    });
    const status = JSON.parse(fs.readFileSync(path.join(tmp, "status.json"), "utf8")) as {
      ok: boolean;
      reason?: string;
    };
    if (r.status !== 0 || !status.ok) return { reason: status.reason ?? `the build script failed: ${r.stderr}` };
    if (!fs.existsSync(path.join(dir, "meshtrain_native.node"))) {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
    }
    return { dir };
  } catch (err) {
    return { reason: `the build script failed: ${(err as Error).message.split("\n")[0]}` };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
