import { spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { makeHosts, type Host, type Hosts } from "./netns";
import { watchOutput } from "./watch-output";

/**
 * Hosts that take ssh: a network namespace each (addresses .2, .3, ... of `subnet`, the test's
 * own end at .1), each running a real sshd (openssh-server) with a host key and a client key
 * the test makes. `sshArgs` point ssh at them (-F a config with the key and known hosts), so
 * BatchMode logins work without touching root's ~/.ssh.
 */
export interface SshHosts {
  hosts: Host[];
  sshArgs: string[];
  /** Stops one host's sshd (its port then refuses). */
  stopSshd(host: Host): void;
  destroy(): void;
}

export const SSHD = "/usr/sbin/sshd";

/** Why sshd hosts cannot be made here, or null. */
export function sshdMissing(): string | null {
  if (!fs.existsSync(SSHD)) return "openssh-server is not installed (apt-get install openssh-server)";
  if (spawnSync("ssh", ["-V"]).status !== 0) return "no ssh client (apt-get install openssh-client)";
  return null;
}

function keygen(file: string): void {
  const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
}

/**
 * `hidden`: folders host `host`'s sshd (and so every session on it) sees empty, a tmpfs over
 * each in a mount namespace of its own: a host without meshtrain's files, on this machine.
 */
export async function startSshHosts(n: number, subnet: string, hidden?: { host: number; paths: string[] }): Promise<SshHosts> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mt-sshd-"));
  const net: Hosts = makeHosts(n, { subnet });
  const daemons = new Map<Host, ChildProcess>();
  const destroy = (): void => {
    for (const d of daemons.values()) d.kill("SIGKILL");
    net.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    keygen(path.join(dir, "host_key"));
    keygen(path.join(dir, "client_key"));
    fs.copyFileSync(path.join(dir, "client_key.pub"), path.join(dir, "authorized_keys"));
    const hostPub = fs.readFileSync(path.join(dir, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    fs.writeFileSync(path.join(dir, "known_hosts"), net.hosts.map((h) => `${h.address} ${hostPub}\n`).join(""));
    fs.writeFileSync(
      path.join(dir, "ssh_config"),
      ["Host *", "  User root", `  IdentityFile ${dir}/client_key`, "  IdentitiesOnly yes", `  UserKnownHostsFile ${dir}/known_hosts`, "  StrictHostKeyChecking yes", "  LogLevel ERROR", ""].join("\n"),
    );
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    for (const h of net.hosts) {
      const conf = path.join(dir, `sshd_${h.address}.conf`);
      fs.writeFileSync(
        conf,
        [`ListenAddress ${h.address}`, "Port 22", `HostKey ${dir}/host_key`, `PidFile ${dir}/sshd_${h.address}.pid`, `AuthorizedKeysFile ${dir}/authorized_keys`, "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "StrictModes no", "UsePAM no", ""].join("\n"),
      );
      const hide = hidden && net.hosts[hidden.host] === h ? hidden.paths : [];
      const d =
        hide.length === 0
          ? net.spawnIn(h, SSHD, ["-D", "-e", "-f", conf], {})
          : net.spawnIn(h, "unshare", ["-m", "--propagation", "private", "sh", "-c", `${hide.map((p) => `mount -t tmpfs none '${p}'`).join(" && ")} && exec ${SSHD} -D -e -f '${conf}'`], {});
      daemons.set(h, d);
      await watchOutput(d).match(/Server listening on/, 15_000, `sshd on ${h.address} starting`);
    }
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    hosts: net.hosts,
    sshArgs: ["-F", path.join(dir, "ssh_config")],
    stopSshd: (h) => daemons.get(h)?.kill("SIGKILL"),
    destroy,
  };
}
