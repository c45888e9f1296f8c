import { execFileSync, spawnSync } from "node:child_process";
import os from "node:os";

/**
 * Hosts made of Linux network namespaces on one machine, as two or more machines on a switch:
 * each host a namespace with one veth link to a bridge, shaped in both directions by a token
 * bucket (tc tbf: the host's upload on its own end, its download on the bridge's end). Delay
 * needs netem, which not every kernel has: `delayMissing()` says so. The hosts share the
 * machine's cores (each process pinned to one where there are enough).
 */
export interface Link {
  name: string;
  /** tc's rate, e.g. "1gbit". */
  rate: string;
  bitsPerSecond: number;
}

export const LINKS: readonly Link[] = [
  { name: "10 Gbit/s", rate: "10gbit", bitsPerSecond: 10e9 },
  { name: "1 Gbit/s", rate: "1gbit", bitsPerSecond: 1e9 },
  { name: "100 Mbit/s", rate: "100mbit", bitsPerSecond: 100e6 },
];

const BRIDGE = "mtbench0";
const PREFIX = "mtb";

export class NamespaceHosts {
  private constructor(readonly names: readonly string[]) {}

  /** `count` hosts (10.77.0.1 ...) on links of `link`'s rate; whatever an earlier run left is removed first. */
  static up(count: number, link: Link): NamespaceHosts {
    NamespaceHosts.clean();
    ip("link", "add", BRIDGE, "type", "bridge");
    ip("link", "set", BRIDGE, "up");
    const names = Array.from({ length: count }, (_, i) => `${PREFIX}${i}`);
    names.forEach((ns, i) => {
      ip("netns", "add", ns);
      ip("link", "add", `${ns}a`, "type", "veth", "peer", "name", `${ns}b`);
      ip("link", "set", `${ns}a`, "netns", ns);
      ip("link", "set", `${ns}b`, "master", BRIDGE);
      ip("link", "set", `${ns}b`, "up");
      ip("netns", "exec", ns, "ip", "addr", "add", `10.77.0.${i + 1}/24`, "dev", `${ns}a`);
      ip("netns", "exec", ns, "ip", "link", "set", `${ns}a`, "up");
      ip("netns", "exec", ns, "ip", "link", "set", "lo", "up");
      shape(["ip", "netns", "exec", ns, "tc"], `${ns}a`, link);
      shape(["tc"], `${ns}b`, link);
    });
    return new NamespaceHosts(names);
  }

  address(host: number): string {
    return `10.77.0.${host + 1}`;
  }

  interfaceOf(host: number): string {
    return `${this.names[host]}a`;
  }

  /** The command line that runs `cmd` on host `host`, pinned to core `core` when given. */
  command(host: number, cmd: string, args: readonly string[], core?: number): [string, string[]] {
    const pin = core === undefined ? [] : ["taskset", "-c", String(core % os.cpus().length)];
    return ["ip", ["netns", "exec", this.names[host]!, ...pin, cmd, ...args]];
  }

  down(): void {
    NamespaceHosts.clean();
  }

  /** Removes every namespace and the bridge this benchmark makes. */
  static clean(): void {
    const list = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout ?? "";
    for (const line of list.split("\n")) {
      const ns = line.split(" ")[0];
      if (ns && ns.startsWith(PREFIX)) spawnSync("ip", ["netns", "del", ns]);
    }
    // A namespace goes once the last process in it has exited; its veth's bridge end with it.
    // Delete those ends now, and wait until none is left, so the next hosts can take the names.
    for (let i = 0; i < 50; i++) {
      const links = (spawnSync("ip", ["-o", "link", "show"], { encoding: "utf8" }).stdout ?? "").match(new RegExp(`${PREFIX}\\d+b`, "g")) ?? [];
      if (links.length === 0) break;
      for (const dev of new Set(links)) spawnSync("ip", ["link", "del", dev]);
      spawnSync("sleep", ["0.1"]);
    }
    spawnSync("ip", ["link", "del", BRIDGE]);
  }

  /** Why these hosts cannot be made here (not root, no ip or tc), or null. */
  static missing(): string | null {
    if (process.getuid?.() !== 0) return "network namespaces need root";
    for (const tool of ["ip", "tc", "taskset"]) if (spawnSync("which", [tool]).status !== 0) return `${tool} is not installed`;
    // Root in a container may still lack CAP_NET_ADMIN: try a namespace and a token bucket in it.
    const ns = `${PREFIX}probe`;
    const made = spawnSync("ip", ["netns", "add", ns], { encoding: "utf8" });
    if (made.status !== 0) return `cannot make a network namespace: ${(made.stderr || "ip netns add failed").trim()}`;
    const shaped = spawnSync("ip", ["netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1gbit", "burst", "262144", "latency", "50ms"], { encoding: "utf8" });
    spawnSync("ip", ["netns", "del", ns]);
    return shaped.status === 0 ? null : `cannot shape a link with tc tbf: ${(shaped.stderr || "tc failed").trim()}`;
  }

  /** netem (delay) is a kernel module some kernels lack: null when it is there, else what tc said. */
  static delayMissing(): string | null {
    const ns = `${PREFIX}probe`;
    spawnSync("ip", ["netns", "add", ns]);
    const r = spawnSync("ip", ["netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], { encoding: "utf8" });
    spawnSync("ip", ["netns", "del", ns]);
    return r.status === 0 ? null : (r.stderr || "netem refused").trim();
  }
}

function ip(...args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/**
 * tbf at the link's rate, its bucket 1 ms at that rate and at least two full frames. A wire
 * banks nothing while it is idle, and a bucket does: the 5 ms and at least 256 KiB it held before
 * let a step's first 256 KiB through at once after its compute at 100 Mbit/s (21 ms of that link:
 * the CNN's rows ran 1.2-1.5x what a wire allows, and the ring and link probes read the links too
 * fast at 10 Gbit/s). tbf cuts a veth's segments bigger than the bucket (GSO, up to 64 KiB) into
 * frames, so none is dropped.
 */
function shape(tc: string[], dev: string, link: Link): void {
  const burst = Math.max(Math.round((link.bitsPerSecond / 8) * 0.001), 2 * FRAME_BYTES);
  execFileSync(tc[0]!, [...tc.slice(1), "qdisc", "add", "dev", dev, "root", "tbf", "rate", link.rate, "burst", String(burst), "latency", "50ms"], { stdio: ["ignore", "ignore", "pipe"] });
}

/** An Ethernet frame of a 1500-byte MTU with its header. */
const FRAME_BYTES = 1514;
