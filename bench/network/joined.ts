import * as crypto from "node:crypto";
import * as path from "node:path";
import { pinnedEnv, ports, runJson, type Json } from "../common";
import type { NamespaceHosts } from "./netns";

/**
 * One meshtrain job across namespace hosts: `driver` (a script of this folder, given its join
 * port) on host 0, and `workers` workers, worker r on host r + 1 pinned to core r, each started
 * as `meshtrain worker --join` with the job's own token. Resolves with the driver's JSON line.
 */
export async function joined(hosts: NamespaceHosts, workers: number, driver: (port: number) => string[]): Promise<Json> {
  const token = crypto.randomBytes(24).toString("hex");
  const port = ports(1);
  const env = pinnedEnv(1, { MESHTRAIN_TOKEN: token });
  const cli = path.join(__dirname, "..", "..", "sdk", "cli", "main.js");
  const [cmd, args] = hosts.command(0, process.execPath, driver(port));
  const run = runJson(cmd, args, env, 1_800_000);
  // Workers retry while the driver starts listening (--join-timeout), then end with it.
  const started = Array.from({ length: workers }, (_, r) => {
    const [wcmd, wargs] = hosts.command(r + 1, process.execPath, [cli, "worker", "--join", `ws://${hosts.address(0)}:${port}`, "--rank", String(r), "--join-timeout", "120"], r);
    return runJson(wcmd, wargs, env, 1_800_000).catch((err: unknown) => err);
  });
  try {
    const [line] = await run;
    return line!;
  } finally {
    await Promise.all(started);
  }
}
