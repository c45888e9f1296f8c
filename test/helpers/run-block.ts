import { spawn } from "node:child_process";

export interface BlockResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  /** Whether any process of the block's process group (its local workers) outlived it, 5 s after it ended. */
  leftBehind: boolean;
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a command in its own process group, as a terminal would, and reports whether it left
 * any process of that group behind (local workers are started in the script's group).
 */
export function runInGroup(command: string, args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<BlockResult> {
  const child = spawn(command, args, { cwd: o.cwd, env: { ...process.env, ...o.env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => {
    out += `\n(killed after ${o.timeoutMs} ms)`;
    process.kill(-child.pid!, "SIGKILL");
  }, o.timeoutMs);
  return new Promise((resolve) =>
    child.on("exit", async (code, signal) => {
      clearTimeout(timer);
      for (let i = 0; i < 50 && groupAlive(child.pid!); i++) await new Promise((r) => setTimeout(r, 100));
      const leftBehind = groupAlive(child.pid!);
      if (leftBehind) process.kill(-child.pid!, "SIGKILL");
      resolve({ code, signal, out, leftBehind });
    }),
  );
}
