import * as fs from "node:fs";
import * as path from "node:path";
import { LaunchError } from "../errors/errors";
import { VERSION } from "../protocol/sdk-version";
import { sshRun } from "./ssh-run";
import { shellQuote, type SshTarget } from "./ssh-target";
import { bundleKey, makeBundle } from "./worker-bundle";
import { userCache } from "./user-cache";
import type { BundleBackend } from "../config/bundle-backends";

/** The bundle this driver ships: a .tar.gz in its user's cache, named by its contents' key. */
export interface LocalBundle {
  file: string;
  key: string;
  /** Made by this launch (false: found in the cache). */
  made: boolean;
}

/**
 * The bundle of this installation with `backends`, made once and kept in
 * ~/.cache/meshtrain/bundles by its key. Without bench:gpu: a launch runs workers, and the
 * bundle is a third of the size without it.
 */
export function localBundle(backends: readonly BundleBackend[]): LocalBundle {
  const key = bundleKey({ backends, bench: false });
  const dir = userCache("bundles");
  const file = path.join(dir, `${key}.tar.gz`);
  if (fs.existsSync(file)) return { file, key, made: false };
  fs.mkdirSync(dir, { recursive: true });
  // Made beside it and moved into place: two drivers making it at once never leave half a file.
  const partial = `${file}.${process.pid}.partial`;
  try {
    makeBundle({ out: partial, backends, bench: false });
    fs.renameSync(partial, file);
  } finally {
    fs.rmSync(partial, { force: true });
  }
  return { file, key, made: true };
}

/** What shipping to one host did: the command that runs the bundle there, and whether bytes were copied. */
export interface Shipped {
  command: string;
  copied: boolean;
}

/**
 * Makes the bundle present on host `t`, in its user's cache by key (copied over ssh, extracted
 * in a folder of its own and moved into place, so a second launch copies nothing and two at once
 * do not mix), and returns the command line that runs it with the host's `node`.
 */
export async function shipBundle(
  t: SshTarget,
  sshArgs: readonly string[],
  b: LocalBundle,
  node: string,
): Promise<Shipped> {
  const dir = `"\${XDG_CACHE_HOME:-$HOME/.cache}/meshtrain/bundles/${b.key}"`;
  const look = await sshRun(
    t,
    sshArgs,
    `d=${dir}; if [ -f "$d/ok" ]; then echo "cached $d"; else echo "missing $d"; fi`,
    { timeoutMs: 30_000 },
  );
  const seen = /^(cached|missing) (.+)$/m.exec(look.stdout);
  if (look.code !== 0 || !seen) {
    throw new LaunchError(
      `could not look for the worker bundle on ${t.label} (ssh exit ${look.code}): ${look.spawnError ?? (look.stderr.trim() || look.stdout.trim())}`,
      {
        hint: "check that ssh reaches the host and that its user has a home folder",
      },
    );
  }
  const where = seen[2]!;
  if (seen[1] === "missing") {
    const put = await sshRun(
      t,
      sshArgs,
      [
        `d=${dir}; t="$d.partial.$$"`,
        'rm -rf "$t" && mkdir -p "$t" && tar -xzf - -C "$t" && touch "$t/ok"',
        // Another launch may have put it there meanwhile: keep theirs.
        '{ [ -f "$d/ok" ] && rm -rf "$t" || { rm -rf "$d"; mv "$t" "$d"; }; } && echo shipped',
      ].join(" && "),
      { input: b.file, timeoutMs: 300_000 },
    );
    if (put.code !== 0 || !/shipped/.test(put.stdout)) {
      throw new LaunchError(
        `could not copy the worker bundle to ${t.label} (${put.timedOut ? "no end within 300 s" : `exit ${put.code}`}): ${put.spawnError ?? put.stderr.trim().split("\n").pop() ?? ""}`,
        {
          hint: `the host needs tar, and room in ${where}`,
        },
      );
    }
  }
  return {
    command: `${shellQuote(node)} ${shellQuote(`${where}/meshtrain-worker-${VERSION}/meshtrain-worker.js`)}`,
    copied: seen[1] === "missing",
  };
}
