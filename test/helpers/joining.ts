import { spawn, type ChildProcess } from "node:child_process";
import { CLI } from "./processes";

/** A `meshtrain worker --join` process, as a launcher on another host would start it. */
export interface Joiner {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string>;
  /** The rank the driver gave it, once it printed its "joined" line. */
  joined(): Promise<number>;
  kill(): void;
}

export function startJoiner(driver: string, o: { token: string; env?: NodeJS.ProcessEnv; args?: string[] }): Joiner {
  const child = spawn(process.execPath, [CLI, "worker", "--join", driver, ...(o.args ?? [])], {
    env: { ...process.env, MESHTRAIN_TOKEN: o.token, ...o.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const listeners: Array<() => void> = [];
  const onData = (d: Buffer): void => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  return {
    child,
    output: () => out,
    exited,
    joined: () =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = / as rank (\d+) of \d+/.exec(out);
          if (m) resolve(Number(m[1]));
        };
        listeners.push(check);
        check();
        void exited.then((code) => reject(new Error(`the joining worker exited (${code}) before it had a rank:\n${out}`)));
      }),
    kill: () => child.kill("SIGKILL"),
  };
}

/** Waits until every joiner has exited, or throws naming those still running after `timeoutMs`. */
export async function allExited(joiners: readonly Joiner[], timeoutMs: number): Promise<Array<number | string>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms: pids ${joiners.filter((j) => j.child.exitCode === null && j.child.signalCode === null).map((j) => j.child.pid).join(", ")}`)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.all(joiners.map((j) => j.exited)), late]);
  } finally {
    clearTimeout(timer);
  }
}
