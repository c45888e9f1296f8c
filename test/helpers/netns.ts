import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { CLI } from "./processes";

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

export interface Hosts {
  hosts: Host[];
  cut(host: Host): void;
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

export function makeHosts(count: number): Hosts {
  const tag = String(process.pid % 100000);
  const bridge = `mtbr${tag}`;
  const hosts: Host[] = [];
  const children: ChildProcess[] = [];
  const destroy = (): void => {
    for (const c of children) c.kill("SIGKILL");
    for (const h of hosts) ip(["netns", "del", h.name]);
    ip(["link", "del", bridge]);
  };
  try {
    must(["link", "add", bridge, "type", "bridge"]);
    must(["addr", "add", "10.231.0.1/24", "dev", bridge]);
    must(["link", "set", bridge, "up"]);
    for (let i = 0; i < count; i++) {
      const h: Host = { name: `mt${tag}h${i}`, address: `10.231.0.${i + 2}`, outer: `mt${tag}o${i}` };
      const inner = `mt${tag}i${i}`;
      must(["netns", "add", h.name]);
      hosts.push(h);
      must(["link", "add", h.outer, "type", "veth", "peer", "name", inner]);
      must(["link", "set", inner, "netns", h.name]);
      must(["link", "set", h.outer, "master", bridge]);
      must(["link", "set", h.outer, "up"]);
      must(["netns", "exec", h.name, "ip", "addr", "add", `${h.address}/24`, "dev", inner]);
      must(["netns", "exec", h.name, "ip", "link", "set", inner, "up"]);
      must(["netns", "exec", h.name, "ip", "link", "set", "lo", "up"]);
    }
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    hosts,
    cut: (h) => must(["link", "set", h.outer, "down"]),
    worker: (h, token) =>
      new Promise((resolve, reject) => {
        const child = spawn("ip", ["netns", "exec", h.name, process.execPath, CLI, "worker", "--host", h.address, "--port", "7070"], {
          env: { ...process.env, MESHTRAIN_TOKEN: token },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        let out = "";
        const timer = setTimeout(() => reject(new Error(`worker on ${h.address} did not start: ${out}`)), 30_000);
        const onData = (d: Buffer): void => {
          out += d.toString();
          const m = /listening on (ws:\/\/[^\s]+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve({ url: m[1]!, child, output: () => out });
          }
        };
        child.stdout!.on("data", onData);
        child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
        child.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`worker on ${h.address} exited with ${code}: ${out}`));
        });
      }),
    destroy,
  };
}
