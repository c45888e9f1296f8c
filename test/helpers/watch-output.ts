import type { ChildProcess } from "node:child_process";

export interface WatchedOutput {
  /** Everything the process printed so far, stdout and stderr interleaved. */
  output(): string;
  /** The first match of `re` in its output (already printed or to come); rejects, quoting the output, if it exits or `timeoutMs` passes first. */
  match(re: RegExp, timeoutMs: number, what: string): Promise<RegExpExecArray>;
}

/** Keeps what a child prints from now on, for tests that wait for a line (a worker listening, a rank given). */
export function watchOutput(child: ChildProcess): WatchedOutput {
  let out = "";
  const waiting = new Set<() => void>();
  const onData = (d: Buffer): void => {
    out += d.toString();
    for (const check of waiting) check();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  return {
    output: () => out,
    match: (re, timeoutMs, what) =>
      new Promise((resolve, reject) => {
        const finish = (fn: () => void): void => {
          clearTimeout(timer);
          waiting.delete(check);
          child.off("exit", onExit);
          fn();
        };
        const check = (): void => {
          const m = re.exec(out);
          if (m) finish(() => resolve(m));
        };
        const onExit = (code: number | null, signal: string | null): void => finish(() => reject(new Error(`${what}: the process exited (${code ?? signal}) first:\n${out}`)));
        const timer = setTimeout(() => finish(() => reject(new Error(`${what}: nothing within ${timeoutMs} ms:\n${out}`))), timeoutMs);
        waiting.add(check);
        child.on("exit", onExit);
        check();
        // Settled already if the line is there; otherwise a process that has ended never prints it.
        if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      }),
  };
}
