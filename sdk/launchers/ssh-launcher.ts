import { spawn, type ChildProcess } from "node:child_process";
import { LaunchError } from "../errors/errors";
import type { SshLauncherSpec } from "../config/launcher-spec";
import { VERSION } from "../protocol/sdk-version";
import { followLines } from "../util/child-lines";
import { killOnExit } from "../util/kill-on-exit";
import { meshtrainCommand } from "./remote-command";
import type { LaunchContext, Launcher } from "./launcher";
import { preflightProblem, type PreflightProblem } from "./preflight-report";
import { sshRun } from "./ssh-run";
import { localBundle, shipBundle, type LocalBundle } from "./bundle-ship";
import { parseSshTarget, resolvedHostName, shellQuote, sshArgv, type SshTarget } from "./ssh-target";
import { localAddressTowards } from "../transport/routes";

const NODE_MAJOR = 20;

interface Started {
  child: ChildProcess;
  rank: number;
  target: SshTarget;
  output: () => string;
}

/**
 * ssh(hosts): a preflight on every host, then workers started through the system's ssh client,
 * each joining the driver with its rank (host order, then workersPerHost), the token on its
 * stdin. A worker exits when its stdin closes, so ending the ssh client ends it: on close(),
 * on the driver's exit, and when the driver dies (its end of the pipe closes).
 */
export class SshLauncher implements Launcher {
  private readonly targets: SshTarget[];
  private towards: string[] = [];
  private readonly started: Started[] = [];
  private stopping = false;
  /** What runs meshtrain on each host: the spec's command, or a shipped bundle. */
  private commands: string[] = [];
  /** The hosts the bundle went to, and whether it was copied or found in their cache. */
  private readonly shipped: Array<{ label: string; copied: boolean }> = [];
  private bundle: LocalBundle | null = null;

  constructor(private readonly spec: SshLauncherSpec) {
    this.targets = spec.hosts.map(parseSshTarget);
  }

  private command(): string {
    return meshtrainCommand(this.spec.command);
  }

  /** Where the driver listens: the given host, else the interface that routes to the hosts (every interface if they differ). */
  async listenHost(): Promise<string> {
    if (this.spec.driverHost) return this.spec.driverHost;
    const names = await Promise.all(this.targets.map((t) => resolvedHostName(t, this.spec.sshArgs)));
    this.towards = await Promise.all(
      names.map((n) => localAddressTowards(`ws://${n.includes(":") ? `[${n}]` : n}:22`).catch(() => "0.0.0.0")),
    );
    return new Set(this.towards).size === 1 && this.towards[0] !== "0.0.0.0" ? this.towards[0]! : "0.0.0.0";
  }

  /** Where host `i` dials the driver: the address on the interface that routes to it, else the listener's own. */
  private urlFor(i: number, joinUrl: string): string {
    const host = this.towards[i];
    if (host === undefined || host === "0.0.0.0") return joinUrl;
    return `ws://${host.includes(":") ? `[${host}]` : host}:${new URL(joinUrl).port}`;
  }

  async start(ctx: LaunchContext): Promise<void> {
    this.commands = this.targets.map(() => this.command());
    const all = this.targets.map((_, i) => i);
    if (this.spec.ship === "always") await this.ship(all);
    const check = (list: number[]): Promise<Array<PreflightProblem | null>> =>
      Promise.all(list.map((i) => this.preflight(i, this.urlFor(i, ctx.joinUrl))));
    const found = await check(all);
    // "auto": where only meshtrain is wrong (missing, not runnable, another version), the bundle goes there and the host is asked again.
    const fixable = all.filter(
      (i) => found[i]?.bundleHelps && this.spec.ship === "auto" && this.spec.command === undefined,
    );
    if (fixable.length > 0) {
      await this.ship(fixable);
      (await check(fixable)).forEach((p, k) => (found[fixable[k]!] = p));
    }
    const problems = found.flatMap((p, i) => (p ? [`${this.targets[i]!.label}: ${p.why}`] : []));
    if (problems.length > 0) {
      throw new LaunchError(
        `ssh preflight failed on ${problems.length} of ${this.targets.length} host(s):\n  ${problems.join("\n  ")}`,
        {
          details: { waitingFor: "every host's preflight" },
          hint: "fix those hosts (or leave them out) and launch again; nothing was started",
        },
      );
    }
    this.targets.forEach((t, i) => {
      for (let k = 0; k < this.spec.workersPerHost; k++)
        this.startWorker(ctx, t, i, i * this.spec.workersPerHost + k, this.urlFor(i, ctx.joinUrl));
    });
  }

  /** The worker bundle to hosts `list`: made (or found) here once, copied where their cache lacks it. */
  private async ship(list: number[]): Promise<void> {
    this.bundle ??= localBundle(this.spec.bundleBackends);
    const b = this.bundle;
    const done = await Promise.all(list.map((i) => shipBundle(this.targets[i]!, this.spec.sshArgs, b, this.spec.node)));
    done.forEach((s, k) => {
      this.commands[list[k]!] = s.command;
      this.shipped.push({ label: this.targets[list[k]!]!.label, copied: s.copied });
    });
  }

  private async preflight(i: number, url: string): Promise<PreflightProblem | null> {
    const command = this.commands[i]!;
    const run = await sshRun(this.targets[i]!, this.spec.sshArgs, `${command} preflight --reach ${shellQuote(url)}`, {
      timeoutMs: 30_000,
    });
    if (run.spawnError !== undefined)
      return { why: `cannot run ssh here (${run.spawnError}): install an OpenSSH client`, bundleHelps: false };
    if (run.timedOut) return { why: "no answer within 30 s", bundleHelps: false };
    return preflightProblem(run, { command, version: VERSION, nodeMajor: NODE_MAJOR, driverUrl: url });
  }

  private startWorker(ctx: LaunchContext, t: SshTarget, host: number, rank: number, url: string): void {
    const remote = `${this.commands[host]!} worker --join ${shellQuote(url)} --rank ${rank} --token-stdin --join-timeout ${ctx.joinTimeoutS}`;
    // Its own process group: a notebook's interrupt (SIGINT to the kernel's group) must not end the workers.
    const child = spawn("ssh", sshArgv(t, this.spec.sshArgs, remote), {
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    killOnExit(child);
    // Its lines are not shown as they come: a joined worker's output reaches the driver through its connection.
    const output = followLines(child);
    child.stdin.on("error", () => undefined);
    child.stdin.write(`${ctx.token}\n`);
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void }).unref?.();
    this.started.push({ child, rank, target: t, output });
    child.once("exit", (code, signal) => {
      if (this.stopping) return;
      ctx.abort(
        new LaunchError(
          `the worker for rank ${rank} on ${t.label} ended (ssh ${signal ? `killed by ${signal}` : `exit code ${code}`}) before the cluster closed`,
          { details: { rank }, hint: `its output:\n${output() || "(none)"}` },
        ),
      );
    });
  }

  async notes(): Promise<string[]> {
    const shipped = this.shipped.map((s) => `${s.label} (${s.copied ? "copied" : "already there"})`);
    return [
      `ssh: ${this.started.length} worker(s) on ${this.targets.map((t) => t.label).join(", ")}`,
      ...(this.bundle && shipped.length > 0
        ? [
            `ssh: the worker bundle ${this.bundle.key} (${this.bundle.made ? "made for this launch" : "from this machine's cache"}) runs on ${shipped.join(", ")}`,
          ]
        : []),
    ];
  }

  /** Closes every worker's stdin (it exits), then ends ssh clients still running after 5 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.started.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.stdin?.end();
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}
