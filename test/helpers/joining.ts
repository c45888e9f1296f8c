import { spawn, type ChildProcess } from "node:child_process";
import { CLI } from "./processes";
import { watchOutput } from "./watch-output";

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
  return startNode([CLI, "worker", "--join", driver, ...(o.args ?? [])], o);
}

/** `node <args>` with the token and `env` in its environment: a joiner, or one rank of a script run on every node. */
export function startNode(args: string[], o: { token: string; env?: NodeJS.ProcessEnv }): Joiner {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, MESHTRAIN_TOKEN: o.token, ...o.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const watched = watchOutput(child);
  const exited = new Promise<number | string>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  return {
    child,
    output: watched.output,
    exited,
    joined: () => watched.match(/ as rank (\d+) of \d+/, 120_000, "a joining worker given its rank").then((m) => Number(m[1])),
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
