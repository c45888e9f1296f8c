import { localWorkerEntry } from "./local-entry";
import { fork, type ChildProcess } from "node:child_process";
import { LaunchError } from "../errors/errors";
import { followLines, type OnLine } from "../util/child-lines";
import { killOnExit } from "../util/kill-on-exit";

export type { OnLine };

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A worker process started on this machine, with the tail of its output for error messages. */
export class LocalWorkerProcess {
  private readonly tail: () => string;
  private exitInfo: ExitInfo | null = null;
  private readonly exited: Promise<ExitInfo>;
  readonly pid: number;

  private constructor(
    readonly child: ChildProcess,
    onLine: OnLine | undefined,
  ) {
    this.pid = child.pid ?? -1;
    // Workers also exit on their own when the IPC channel to this process closes (a killed
    // driver or a restarted kernel); this covers a normal exit that forgot close().
    killOnExit(child);
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        const info = { code, signal };
        this.exitInfo = info;
        // What it printed last (why it exited) may still be in the pipe: wait for the pipes to
        // close, briefly, so an error about the exit can quote it.
        const done = (): void => resolve(info);
        child.once("close", done);
        setTimeout(done, 300).unref();
      });
    });
    this.tail = followLines(child, onLine);
  }

  /**
   * `onLine`: each line the worker writes, as it arrives (the driver shows it with the worker's
   * rank). `o.host`: the interface it listens on (loopback); `o.joins`: it joins the driver at
   * that address instead of being reached, its output then reaching the driver as a joined
   * worker's does (so `onLine` is not given).
   */
  static start(
    env: NodeJS.ProcessEnv,
    extraArgs: string[] = [],
    onLine?: OnLine,
    o: { host?: string; joins?: string[] } = {},
  ): LocalWorkerProcess {
    const entry = localWorkerEntry();
    const how = o.joins ? o.joins : ["--exit-with-driver"];
    const child = fork(entry, ["--host", o.host ?? "127.0.0.1", "--port", "0", ...how, ...extraArgs], {
      env,
      // The driver may run under tsx, ts-node or a notebook kernel; workers are plain node.
      execArgv: [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    // Like the driver's sockets, a worker process never keeps the driver alive by itself.
    child.unref();
    child.channel?.unref();
    for (const stream of [child.stdout, child.stderr]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    return new LocalWorkerProcess(child, onLine);
  }

  get exit(): ExitInfo | null {
    return this.exitInfo;
  }

  whenExited(): Promise<ExitInfo> {
    return this.exited;
  }

  output(): string {
    return this.tail();
  }

  /** Resolves with the worker's URL once it listens; rejects if it exits or takes too long. */
  listening(timeoutMs: number, name: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new LaunchError(`${name} (pid ${this.pid}) did not start listening within ${timeoutMs} ms`, {
            details: { waitingFor: `${name} to listen` },
            hint: `the machine may be overloaded; raise .timeouts({ connectMs }). Its output:\n${this.output() || "(none)"}`,
          }),
        );
      }, timeoutMs);
      const onMessage = (m: unknown): void => {
        const msg = m as { type?: string; url?: string };
        if (msg?.type === "listening" && typeof msg.url === "string") {
          cleanup();
          resolve(msg.url);
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        cleanup();
        reject(
          new LaunchError(`${name} exited while starting (${describeExit({ code, signal })})`, {
            hint: `its output:\n${this.output() || "(none)"}`,
          }),
        );
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        this.child.off("message", onMessage);
        this.child.off("exit", onExit);
      };
      this.child.on("message", onMessage);
      this.child.once("exit", onExit);
    });
  }

  /** Asks politely, then insists: SIGTERM, and SIGKILL after `graceMs`. */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }
}

export function describeExit(e: ExitInfo): string {
  return e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
}
