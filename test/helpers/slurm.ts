import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { addHostsLine } from "./etc-hosts";
import * as os from "node:os";
import * as path from "node:path";
import { processesMatching, waitFor } from "./processes";
import { ensureDebianPackages } from "./system-deps";

/**
 * A real Slurm on this machine for the launcher tests, started without systemd (package scripts
 * may not start daemons here): munged, a slurmctld and two slurmd nodes, mtn1 and mtn2 (one
 * machine, a port each), partition "debug". SLURM_CONF points this process's sbatch, srun and
 * scontrol at it; /etc/hosts names the nodes (fromEnv resolves the first one). stop() ends
 * every daemon it started and undoes the rest.
 */
export interface TestSlurm {
  conf: string;
  dir: string;
  /** `scontrol show job` fields of a job. */
  job(id: string): { state: string; nodes: string };
  stop(): void;
}

const HOSTS_LINE = "127.0.0.1 mtn1 mtn2 # meshtrain slurm test";

function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): { ok: boolean; out: string } {
  const r = spawnSync(cmd, args, { encoding: "utf8", env, timeout: 20_000 });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error?.message ?? ""}` };
}

function startMunge(): boolean {
  if (sh("munge", ["-n"]).ok) return false;
  fs.mkdirSync("/run/munge", { recursive: true });
  sh("chown", ["munge:munge", "/run/munge"]);
  if (!fs.existsSync("/etc/munge/munge.key")) {
    const r = sh("runuser", ["-u", "munge", "--", "mungekey", "--create"]);
    if (!r.ok) throw new Error(`mungekey: ${r.out}`);
  }
  const r = sh("runuser", ["-u", "munge", "--", "/usr/sbin/munged"]);
  if (!r.ok) throw new Error(`munged: ${r.out}`);
  return true;
}

function slurmConf(dir: string): string {
  return [
    "ClusterName=mt",
    "SlurmctldHost=localhost(127.0.0.1)",
    "SlurmctldPort=16817",
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    `StateSaveLocation=${dir}/state`,
    `SlurmdSpoolDir=${dir}/spool/%n`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd-%n.pid`,
    `SlurmctldLogFile=${dir}/slurmctld.log`,
    `SlurmdLogFile=${dir}/slurmd-%n.log`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_CPU",
    "MpiDefault=none",
    "ReturnToService=2",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",
    "NodeName=mtn1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=16821 CPUs=2 State=UNKNOWN",
    "NodeName=mtn2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=16822 CPUs=2 State=UNKNOWN",
    "PartitionName=debug Nodes=mtn[1-2] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
    "",
  ].join("\n");
}

export async function startSlurm(): Promise<TestSlurm> {
  ensureDebianPackages("Slurm and munge", ["slurm-wlm", "slurm-client", "munge"], () => fs.existsSync("/usr/sbin/slurmctld") && fs.existsSync("/usr/sbin/slurmd") && fs.existsSync("/usr/sbin/munged"));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mt-slurm-"));
  const conf = path.join(dir, "slurm.conf");
  for (const d of ["state", "spool/mtn1", "spool/mtn2"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
  fs.writeFileSync(conf, slurmConf(dir));
  const startedMunge = startMunge();
  const removeHosts = addHostsLine(HOSTS_LINE);
  process.env.SLURM_CONF = conf;
  const stop = (): void => {
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith(".pid"))) {
      const pid = Number(fs.readFileSync(path.join(dir, f), "utf8"));
      if (pid > 0) sh("kill", ["-9", String(pid)]);
    }
    // Step daemons outlive a slurmd killed outright.
    for (const pid of processesMatching("slurmstepd")) sh("kill", ["-9", String(pid)]);
    if (startedMunge && fs.existsSync("/run/munge/munged.pid")) sh("kill", [fs.readFileSync("/run/munge/munged.pid", "utf8").trim()]);
    removeHosts();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [cmd, args] of [["/usr/sbin/slurmctld", ["-f", conf, "-i"]], ["/usr/sbin/slurmd", ["-f", conf, "-N", "mtn1"]], ["/usr/sbin/slurmd", ["-f", conf, "-N", "mtn2"]]] as const) {
      const r = sh(cmd, [...args]);
      if (!r.ok) throw new Error(`${cmd} ${args.join(" ")}: ${r.out}`);
    }
    await waitFor("Slurm's two nodes to be idle", () => sh("sinfo", ["-h", "-o", "%T %D"]).out.trim() === "idle 2", 30_000);
  } catch (err) {
    stop();
    throw err;
  }
  return {
    conf,
    dir,
    job: (id) => {
      const out = sh("scontrol", ["show", "job", id, "--oneliner"]).out;
      return { state: /JobState=(\S+)/.exec(out)?.[1] ?? "(unknown)", nodes: / NodeList=(\S*)/.exec(out)?.[1] ?? "" };
    },
    stop,
  };
}
