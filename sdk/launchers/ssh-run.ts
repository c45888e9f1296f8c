import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { sshArgv, type SshTarget } from "./ssh-target";

/** What one command run over ssh gave; `timedOut` when it was killed at its time limit, `spawnError` when ssh itself could not run. */
export interface SshRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  spawnError?: string;
}

/** Runs `command` on host `t` through this machine's ssh client, the file `input` (if any) on its stdin. */
export function sshRun(
  t: SshTarget,
  sshArgs: readonly string[],
  command: string,
  o: { input?: string; timeoutMs: number },
): Promise<SshRun> {
  return new Promise((resolve) => {
    const child = spawn("ssh", sshArgv(t, sshArgs, command), { stdio: [o.input ? "pipe" : "ignore", "pipe", "pipe"] });
    const run: SshRun = { code: null, stdout: "", stderr: "", timedOut: false };
    child.stdout?.on("data", (c: Buffer) => (run.stdout += c.toString("utf8")));
    child.stderr?.on("data", (c: Buffer) => (run.stderr += c.toString("utf8")));
    const timer = setTimeout(() => {
      run.timedOut = true;
      child.kill("SIGKILL");
    }, o.timeoutMs);
    if (o.input && child.stdin) {
      child.stdin.on("error", () => undefined);
      fs.createReadStream(o.input).pipe(child.stdin);
    }
    child.once("error", (err) => {
      clearTimeout(timer);
      resolve({ ...run, spawnError: err.message });
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ ...run, code });
    });
  });
}
