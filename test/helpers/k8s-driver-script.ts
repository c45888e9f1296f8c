import { cluster } from "../../sdk/index";
import { differenceFromModelFit } from "./fit-check";

/**
 * What a user's train.js in the driver pod of `meshtrain k8s --driver-command` does: join() with
 * the variables the manifest gives it (MESHTRAIN_WORKERS, MESHTRAIN_PORT, MESHTRAIN_TOKEN), train,
 * close. It prints its workers' pids in rank order and how far training was from model.fit.
 */
async function main(): Promise<void> {
  const env = (name: string): string => {
    const v = process.env[name];
    if (v === undefined) throw new Error(`the driver pod's environment has no ${name}`);
    return v;
  };
  const c = await cluster()
    .join({ workers: Number(env("MESHTRAIN_WORKERS")), host: "0.0.0.0", port: Number(env("MESHTRAIN_PORT")), timeoutMs: 60_000 })
    .token(env("MESHTRAIN_TOKEN"))
    .backend("cpu")
    .launch();
  try {
    process.stdout.write(`ranks ${c.workers.map((w) => w.info.pid).join(" ")}\n`);
    process.stdout.write(`difference ${await differenceFromModelFit(c, { size: 96, seed: 5 })}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
