import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { bundleRoot } from "../../util/bundle-root";

/** In the worker bundle: native/build at its root, beside meshtrain-worker.js. */
export const ADDON_ROOT = bundleRoot();

/**
 * The bundle's prebuilt addon did not load on this host (another libc, no OpenBLAS of that
 * name): builds it here from the bundle's C sources if a compiler and OpenBLAS are present.
 * Built in a folder of its own, then moved into place, so that workers started together from
 * one extracted bundle never load a half-written file. Returns why not, or "" once built.
 */
export function rebuildAddon(): string {
  const script = path.join(ADDON_ROOT, "scripts", "build-native.js");
  if (!fs.existsSync(script)) return "the bundle holds no build script";
  process.stderr.write(
    "meshtrain worker: the bundle's prebuilt native addon does not load on this host; building it here from its sources\n",
  );
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-native-"));
  try {
    spawnSync(process.execPath, [script, "--out-dir", tmp], { encoding: "utf8", timeout: 300_000 });
    const status = JSON.parse(fs.readFileSync(path.join(tmp, "status.json"), "utf8")) as {
      ok: boolean;
      reason?: string;
    };
    if (!status.ok) return `rebuilding it here failed: ${status.reason ?? "no reason given"}`;
    const dir = path.join(ADDON_ROOT, "native", "build");
    fs.mkdirSync(dir, { recursive: true });
    fs.renameSync(path.join(tmp, "meshtrain_native.node"), path.join(dir, "meshtrain_native.node"));
    fs.renameSync(path.join(tmp, "status.json"), path.join(dir, "status.json"));
    process.stderr.write("meshtrain worker: built the native addon on this host\n");
    return "";
  } catch (err) {
    return `rebuilding it here failed: ${(err as Error).message.split("\n")[0]}`;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
