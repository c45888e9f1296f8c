import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { LaunchError } from "../errors/errors";
import { VERSION } from "../protocol/sdk-version";
import type { LocalBundle } from "./bundle-ship";

/** The bundle extracted into a shared folder: the program its nodes run, and whether this launch put it there. */
export interface SharedBundle {
  program: string;
  extracted: boolean;
}

/**
 * Extracts bundle `b` into `root`/<key> (a folder every node mounts at the same path), once: a
 * later launch finds it by its `ok` mark. Extracted beside it and moved into place, so nodes
 * never run a half-extracted bundle and two drivers at once keep one copy.
 */
export function extractShared(b: LocalBundle, root: string): SharedBundle {
  const dir = path.join(root, b.key);
  const program = path.join(dir, `meshtrain-worker-${VERSION}`, "meshtrain-worker.js");
  if (fs.existsSync(path.join(dir, "ok"))) return { program, extracted: false };
  let tmp: string;
  try {
    fs.mkdirSync(root, { recursive: true });
    tmp = fs.mkdtempSync(path.join(root, `${b.key}.partial-`));
  } catch (err) {
    throw new LaunchError(`cannot write the worker bundle into sharedDir ${root}: ${(err as Error).message}`, {
      hint: "name a folder this user can write, on a file system the nodes share",
    });
  }
  try {
    const tar = spawnSync("tar", ["-xzf", b.file, "-C", tmp], { encoding: "utf8" });
    if (tar.status !== 0) {
      throw new LaunchError(`could not extract the worker bundle into ${tmp}: ${tar.stderr || tar.error?.message}`, {
        hint: `tar is needed here, and room in ${root}`,
      });
    }
    fs.writeFileSync(path.join(tmp, "ok"), "");
    if (!fs.existsSync(path.join(dir, "ok"))) {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.renameSync(tmp, dir);
    }
    return { program, extracted: true };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
