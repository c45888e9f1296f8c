import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { CLI } from "./processes";
import { watchOutput } from "./watch-output";

/**
 * Separate hosts made with Linux network namespaces: each host a namespace with its own address
 * on a bridge in the test's namespace, joined by a veth pair whose outer end the test can take
 * down to cut that host off. Needs root (CAP_NET_ADMIN) and iproute2.
 */

function ip(args: string[]): { ok: boolean; err: string } {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  return { ok: r.status === 0, err: (r.stderr || r.error?.message || "").trim() };
}

function must(args: string[]): void {
  const r = ip(args);
  if (!r.ok) throw new Error(`ip ${args.join(" ")}: ${r.err}`);
}

export interface Host {
  name: string;
  address: string;
  /** The veth end outside the namespace: down cuts the host off. */
  outer: string;
}

export interface HostsOptions {
  /** The first three octets of the hosts' /24; hosts get .2, .3, ... (10.231.0). */
  subnet?: string;
  /**
   * Put the bridge in a namespace of its own instead of the test's, with no address: the hosts
   * reach only each other, and this machine's routes are untouched (for addresses its own network
   * might use). Run a driver there with `spawnIn`.
   */
  isolated?: boolean;
}

export interface Hosts {
  hosts: Host[];
  cut(host: Host): void;
  /** Starts a command inside the host's namespace (pipes for stdout and stderr). */
  spawnIn(host: Host, command: string, args: string[], o: { cwd?: string; env?: NodeJS.ProcessEnv; detached?: boolean }): ChildProcess;
  /** Starts `meshtrain worker` inside the host's namespace, listening on its address. */
  worker(host: Host, token: string): Promise<{ url: string; child: ChildProcess; output(): string }>;
  destroy(): void;
}

/** Why namespaces cannot be made here, or null when they can. */
export function netnsMissing(): string | null {
  const probe = `mtprobe${process.pid}`;
  const r = ip(["netns", "add", probe]);
  if (!r.ok) return `cannot create network namespaces here (${r.err || "ip failed"}); run as root with iproute2`;
  ip(["netns", "del", probe]);
  return null;
}

export function makeHosts(count: number, o: HostsOptions = {}): Hosts {
  const tag = String(process.pid % 100000);
  const subnet = o.subnet ?? "10.231.0";
  const bridge = `mtbr${tag}`;
  // Where the bridge and the hosts' outer veth ends live: the test's namespace, or one of their own.
  const sw = o.isolated ? `mt${tag}sw` : null;
  const outside = (args: string[]): string[] => (sw ? ["-n", sw, ...args] : args);
  const hosts: Host[] = [];
  const children: ChildProcess[] = [];
  const destroy = (): void => {
    for (const c of children) c.kill("SIGKILL");
    for (const h of hosts) ip(["netns", "del", h.name]);
    if (sw) ip(["netns", "del", sw]);
    else ip(["link", "del", bridge]);
  };
  try {
    if (sw) must(["netns", "add", sw]);
    must(outside(["link", "add", bridge, "type", "bridge"]));
    if (!sw) must(["addr", "add", `${subnet}.1/24`, "dev", bridge]);
    must(outside(["link", "set", bridge, "up"]));
    for (let i = 0; i < count; i++) {
      const h: Host = { name: `mt${tag}h${i}`, address: `${subnet}.${i + 2}`, outer: `mt${tag}o${i}` };
      const inner = `mt${tag}i${i}`;
      must(["netns", "add", h.name]);
      hosts.push(h);
      must(["link", "add", h.outer, "type", "veth", "peer", "name", inner]);
      must(["link", "set", inner, "netns", h.name]);
      if (sw) must(["link", "set", h.outer, "netns", sw]);
      must(outside(["link", "set", h.outer, "master", bridge]));
      must(outside(["link", "set", h.outer, "up"]));
      must(["netns", "exec", h.name, "ip", "addr", "add", `${h.address}/24`, "dev", inner]);
      must(["netns", "exec", h.name, "ip", "link", "set", inner, "up"]);
      must(["netns", "exec", h.name, "ip", "link", "set", "lo", "up"]);
    }
  } catch (err) {
    destroy();
    throw err;
  }
  const spawnIn: Hosts["spawnIn"] = (h, command, args, so) => {
    const child = spawn("ip", ["netns", "exec", h.name, command, ...args], { cwd: so.cwd, env: { ...process.env, ...so.env }, detached: so.detached, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    return child;
  };
  return {
    hosts,
    cut: (h) => must(outside(["link", "set", h.outer, "down"])),
    spawnIn,
    worker: async (h, token) => {
      const child = spawnIn(h, process.execPath, [CLI, "worker", "--host", h.address, "--port", "7070"], { env: { MESHTRAIN_TOKEN: token } });
      const watched = watchOutput(child);
      const m = await watched.match(/listening on (ws:\/\/[^\s]+)/, 30_000, `the worker on ${h.address} starting`);
      return { url: m[1]!, child, output: watched.output };
    },
    destroy,
  };
}
