import * as tf from "@tensorflow/tfjs";
import { AbortError, cluster, datasets, type TrainingRun } from "../../sdk/index";
import { smallClassifier } from "./models";

/**
 * A user's training script, for the Ctrl-C tests: it prints its workers' pids, then each step;
 * the test sends SIGINT to its whole process group, as a terminal does. With "idle" in argv it
 * trains nothing and waits for the interrupt (which should close the cluster and end it).
 */
async function main(): Promise<void> {
  tf.enableProdMode();
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  process.stdout.write(`pids ${c.workers.map((w) => w.info.pid).join(" ")}\n`);
  if (process.argv.includes("idle")) {
    process.stdout.write("step idle\n");
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    process.stdout.write("still running after 30 s\n");
    return;
  }
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 4000, seed: 3 });
  // When the interrupt reached this process: the steps after it are what the stop may take.
  let lastStep = -1;
  let told = false;
  process.on("SIGINT", () => {
    if (!told) process.stdout.write(`interrupt seen after step ${lastStep}\n`);
    told = true;
  });
  // Slow steps, so that the interrupt lands mid-fit.
  const onStep = (s: { step: number }): void => {
    lastStep = s.step;
    process.stdout.write(`step ${s.step}\n`);
    const until = performance.now() + 40;
    while (performance.now() < until);
  };
  try {
    await c.fit(smallClassifier(6, 3), ds, { epochs: 1, batchSize: 16, onStep });
    process.stdout.write("fit finished\n");
  } catch (err) {
    if (!(err instanceof AbortError)) throw err;
    process.stdout.write(`aborted after ${(err as AbortError<TrainingRun>).run?.history.length} steps\n`);
  }
  // A moment before the next fit, as a user reading the message would take (a second Ctrl-C lands here).
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const next = await c.fit(smallClassifier(6, 3), datasets.synthetic({ inputShape: [6], classes: 3, size: 64, seed: 3 }), { batchSize: 16 });
  process.stdout.write(`second fit ${next.history.length} steps\n`);
  await c.close();
  process.stdout.write("closed\n");
}

void main().catch((err: unknown) => {
  process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
  process.exit(1);
});
