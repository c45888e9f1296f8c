import { cluster } from "../../sdk/index";

/**
 * A driver whose workers a launcher starts (argv[2]: JSON { ssh: { hosts, sshArgs,
 * workersPerHost } } or { slurm: { ...slurm() options } }). It says which pids its workers
 * have, then waits: the test kills it (SIGKILL, as a crash would) or interrupts its launch
 * (SIGINT) and checks what the launcher left behind.
 */
async function main(): Promise<void> {
  const how = JSON.parse(process.argv[2]!) as { ssh?: { hosts: string[]; sshArgs: string[]; workersPerHost: number }; slurm?: { nodes: number; args?: string[]; timeoutMs?: number } };
  const b = how.ssh ? cluster().ssh(how.ssh.hosts, { sshArgs: how.ssh.sshArgs, workersPerHost: how.ssh.workersPerHost }) : cluster().slurm(how.slurm!);
  try {
    const c = await b.backend("cpu").launch();
    process.stdout.write(`launched ${c.workers.map((w) => w.info.pid).join(" ")}\n`);
  } catch (err) {
    process.stdout.write(`launch failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`);
    return;
  }
  await new Promise((resolve) => setTimeout(resolve, 120_000));
}

void main();
