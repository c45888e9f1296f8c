import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/index";
import { differenceFromModelFit } from "./fit-check";

/**
 * One rank of a script run the same way on every node (`srun node spmd-script.js <port>
 * <strategy>`): cluster().fromEnv() makes rank 0 the driver and every other rank its worker.
 * Rank 0 trains, compares with model.fit on the same batches, and prints the result as a
 * JSON line; the other ranks never get past launch(). `hold` keeps rank 0 waiting after
 * launch (the test kills it, as a crash would).
 */
async function main(): Promise<void> {
  tf.enableProdMode();
  const [port, strategy, hold] = [Number(process.argv[2]), process.argv[3] === "pipeline" ? "pipeline" : "data", process.argv[4] === "hold"];
  const b = cluster().fromEnv({ port, timeoutMs: 90_000 }).backend("cpu");
  const c = await (strategy === "pipeline" ? b.strategy("pipeline", { microBatches: 2 }) : b.strategy("data")).launch();
  process.stdout.write(`driver: workers ${JSON.stringify(c.workers.map((w) => w.info.pid))}\n`);
  if (hold) await new Promise((resolve) => setTimeout(resolve, 120_000));
  process.stdout.write(`result ${JSON.stringify({ size: c.size, difference: await differenceFromModelFit(c, { size: 96, seed: 7 }) })}\n`);
  await c.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`spmd-script failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}\n`);
  process.exit(1);
});
