import * as path from "node:path";
import type { BundleResult } from "../launchers/worker-bundle";

/** What `meshtrain bundle` prints: the file and its size, and with `list` each part and why. */
export function bundleReport(b: BundleResult, list: boolean): string {
  const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const lines = [`${b.file}: ${mib(b.bytes)} (${mib(b.parts.reduce((s, p) => s + p.bytes, 0))} extracted)`];
  if (b.noPrebuilt) lines.push(`no prebuilt native addon (${b.noPrebuilt}): each host builds it, or uses wasm`);
  if (list) {
    // The addon's sources as one line: 30-odd files with one reason.
    const src = b.parts.filter((p) => p.path.startsWith("native/src/"));
    const shown = [
      ...b.parts.filter((p) => !p.path.startsWith("native/src/")),
      ...(src.length > 0
        ? [{ path: `native/src/ (${src.length} files)`, bytes: src.reduce((s, p) => s + p.bytes, 0), why: src[0]!.why }]
        : []),
    ].sort((x, y) => x.path.localeCompare(y.path));
    for (const p of shown) lines.push(`  ${p.path.padEnd(44)} ${mib(p.bytes).padStart(9)}  ${p.why}`);
  }
  const inside = b.parts.some((p) => p.path === "node/bin/node");
  lines.push(
    `on ${inside ? "any host of this platform (Node is inside)" : "a host with Node 20 or later"}: tar -xzf ${path.basename(b.file)} && ${b.dir}/meshtrain-worker --join ws://DRIVER:7071 (the token in MESHTRAIN_TOKEN)`,
  );
  return lines.join("\n");
}
