import { cluster } from "../../sdk/index";

/**
 * A driver that lets 2 workers join at the port in argv, says so, then waits: the test kills it
 * (SIGKILL, as a crash would) and checks that the joined workers end.
 */
async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const c = await cluster().join({ workers: 2, port, timeoutMs: 60_000 }).token(process.env.MESHTRAIN_TOKEN!).backend("cpu").launch();
  process.stdout.write(`launched ${c.workers.map((w) => w.info.pid).join(" ")}\n`);
  await new Promise((resolve) => setTimeout(resolve, 120_000));
}

void main();
