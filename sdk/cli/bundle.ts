import * as path from "node:path";
import type { BundleResult } from "../launchers/worker-bundle";

/** What `meshtrain bundle` prints: the file and its size, and with `list` each part and why. */
export function bundleReport(b: BundleResult, list: boolean): string {
  const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;
  const lines = [`${b.file}: ${mib(b.bytes)} (${mib(b.parts.reduce((s, p) => s + p.bytes, 0))} extracted)`];
  if (b.noPrebuilt) lines.push(`no prebuilt native addon (${b.noPrebuilt}): each host builds it, or uses wasm`);
  if (list) for (const p of b.parts) lines.push(`  ${p.path.padEnd(44)} ${mib(p.bytes).padStart(9)}  ${p.why}`);
  lines.push(
    `on a host with Node 20 or later: tar -xzf ${path.basename(b.file)} && node ${b.dir}/meshtrain-worker.js --join ws://DRIVER:7071 (the token in MESHTRAIN_TOKEN)`,
  );
  return lines.join("\n");
}
