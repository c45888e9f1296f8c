import { execFile } from "node:child_process";
import { ConfigError } from "../errors/errors";
import { SSH_HOST_PATTERN } from "../config/launcher-spec";

/** One ssh() host: "host", "user@host" or "user@host:2222". */
export interface SshTarget {
  /** What ssh is given ("user@host"): its own config (~/.ssh/config aliases) applies. */
  destination: string;
  port: number | undefined;
  /** As the user wrote it, for messages. */
  label: string;
}

export function parseSshTarget(text: string): SshTarget {
  if (!SSH_HOST_PATTERN.test(text))
    throw new ConfigError(`ssh host ${JSON.stringify(text)} is not host, user@host or user@host:port`, {
      hint: 'e.g. ssh(["node1", "alice@node2:2222"])',
    });
  const m = /^(.*?)(?::(\d+))?$/.exec(text)!;
  const destination = m[1]!.replace(/\[|\]/g, "");
  return { destination, port: m[2] === undefined ? undefined : Number(m[2]), label: text };
}

/** Ssh's arguments for a command on `t`: never a prompt (BatchMode), a bounded connect, a dead link noticed in 15 s. */
export function sshArgv(t: SshTarget, extra: readonly string[], remoteCommand: string): string[] {
  return [
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
    ...extra,
    ...(t.port !== undefined ? ["-p", String(t.port)] : []),
    t.destination,
    "--",
    remoteCommand,
  ];
}

/** The host name ssh would connect to for `t` (its config's HostName), from `ssh -G`. */
export function resolvedHostName(t: SshTarget, extra: readonly string[]): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      "ssh",
      ["-G", ...extra, ...(t.port !== undefined ? ["-p", String(t.port)] : []), t.destination],
      { timeout: 10_000 },
      (err, stdout) => {
        const name = /^hostname (\S+)$/m.exec(String(stdout))?.[1];
        resolve(err || !name ? t.destination.replace(/^.*@/, "") : name);
      },
    );
  });
}

/** `arg` quoted for the remote POSIX shell. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
