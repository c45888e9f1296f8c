import { spawn, spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as path from "node:path";
import { pinnedEnv, ports, runJson, type Json } from "../common";
import type { NamespaceHosts } from "./netns";

const SERVER_START_MS = 120_000;

/**
 * One meshtrain job across namespace hosts: `driver` (a script of this folder, given its join
 * port) on host 0, and `workers` workers, worker r on host r + 1 pinned to core r, each started
 * as `meshtrain worker --join` with the job's own token. With `server`, a parameter server on
 * host workers + 1, listening before the driver starts (its address in the driver's PS_URL).
 * Resolves with the driver's JSON line.
 */
export async function joined(hosts: NamespaceHosts, workers: number, driver: (port: number) => string[], o: { server?: boolean } = {}): Promise<Json> {
  const token = crypto.randomBytes(24).toString("hex");
  const port = ports(2);
  const env = pinnedEnv(1, { MESHTRAIN_TOKEN: token });
  const cli = path.join(__dirname, "..", "..", "sdk", "cli", "main.js");
  const serverAt = hosts.address(workers + 1);
  const server = o.server ? await startServer(hosts, workers + 1, cli, serverAt, port + 1, env) : null;
  const [cmd, args] = hosts.command(0, process.execPath, driver(port));
  const run = runJson(cmd, args, { ...env, ...(server ? { PS_URL: `ws://${serverAt}:${port + 1}` } : {}) }, 1_800_000);
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
    // A server started without --join serves until it is stopped.
    server?.stop();
  }
}

/** Resolves once the server listens: the driver connects to it at once, and a slow machine took longer to start it than the driver. */
async function startServer(hosts: NamespaceHosts, host: number, cli: string, address: string, port: number, env: NodeJS.ProcessEnv): Promise<{ stop(): void }> {
  const [cmd, args] = hosts.command(host, process.execPath, [cli, "worker", "--host", address, "--port", String(port)], host - 1);
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  // By its command line: `ip netns exec` (and taskset) stand between this process and node.
  const stop = (): void => void spawnSync("pkill", ["-f", `worker --host ${address} --port ${port}`]);
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(`did not listen within ${SERVER_START_MS / 1000} s`), SERVER_START_MS);
    const fail = (why: string): void => {
      clearTimeout(timer);
      stop();
      reject(new Error(`the parameter server on ${address}:${port} ${why}:\n${out}`));
    };
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (out.includes("listening on ")) {
        clearTimeout(timer);
        child.off("exit", onExit);
        child.stdout.off("data", onData);
        child.stderr.off("data", onData);
        resolve();
      }
    };
    const onExit = (code: number | null, signal: string | null): void => fail(`exited (${code ?? signal}) before it listened`);
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", onExit);
  });
  // Drained from here on, so a full pipe never stalls it.
  child.stdout.resume();
  child.stderr.resume();
  return { stop };
}
