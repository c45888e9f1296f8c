import { cluster } from "../../sdk/index";

/**
 * A driver that starts workers over ssh (hosts and ssh arguments as JSON in argv, then workers per host), says which
 * pids its workers have, then waits: the test kills it (SIGKILL, as a crash would) and checks
 * that the remote workers end.
 */
async function main(): Promise<void> {
  const [hosts, sshArgs, workersPerHost] = [JSON.parse(process.argv[2]!) as string[], JSON.parse(process.argv[3]!) as string[], Number(process.argv[4])];
  const c = await cluster().ssh(hosts, { sshArgs, workersPerHost }).backend("cpu").launch();
  process.stdout.write(`launched ${c.workers.map((w) => w.info.pid).join(" ")}\n`);
  await new Promise((resolve) => setTimeout(resolve, 120_000));
}

void main();
