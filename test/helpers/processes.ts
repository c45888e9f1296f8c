import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { watchOutput } from "./watch-output";

export const CLI = path.join(__dirname, "..", "..", "sdk", "cli", "main.js");

/** Alive and not a zombie (a container's PID 1 may never reap orphans). */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** A port free on 127.0.0.1 now, for a listener the test tells its processes about. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Pids of processes whose command line contains `text` (network namespaces here share one pid space). */
export function processesMatching(text: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").includes(text)) pids.push(Number(entry));
    } catch {
      // It exited while we looked.
    }
  }
  return pids;
}

export async function waitFor(what: string, cond: () => boolean, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface CliWorker {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts `meshtrain worker` as a separate program, the way a remote host would. */
export function startCliWorker(token: string, args: string[] = []): Promise<CliWorker> {
  return startWorkerProgram([CLI, "worker", "--port", "0", ...args], { env: { ...process.env, MESHTRAIN_TOKEN: token } });
}

/** Starts a worker program (`node ...argv`) and resolves once it says where it listens. */
export function startWorkerProgram(argv: string[], o: { env: NodeJS.ProcessEnv; cwd?: string }): Promise<CliWorker> {
  const child = spawn(process.execPath, argv, { env: o.env, cwd: o.cwd, stdio: ["ignore", "pipe", "pipe"] });
  const watched = watchOutput(child);
  return watched.match(/listening on (wss?:\/\/[^\s]+)/, 30_000, "a meshtrain worker starting").then((m) => ({
    url: m[1]!,
    child,
    output: watched.output,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGKILL");
      }),
  }));
}
