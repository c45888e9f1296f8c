import { cluster, datasets, type ClusterBuilder } from "../../sdk/index";
import { buildDemoModel, type DemoModel } from "../../sdk/cli/models";
import { median } from "../../sdk/util/median";

/**
 * One data-parallel fit of a demo model on 2 local workers, on their GPUs (`gpu`: the software
 * adapter where no hardware one exists) or on the CPU (`native`), for bench:gpu. Prints one JSON
 * line: samples/s after warm-up and each step's median split (compute, readback, upload, all-reduce).
 *
 * usage: node cluster-fit.js <model> <gpu|native> <steps> [global batch, default 64]
 */
async function main(): Promise<void> {
  const [model, where, stepsArg, batchArg] = process.argv.slice(2) as [DemoModel, "gpu" | "native", string, string?];
  const steps = Number(stepsArg);
  const batch = Number(batchArg ?? 64);
  const builder: ClusterBuilder = where === "gpu" ? cluster().gpus(2, { software: true }) : cluster().workers(2).backend("native");
  const c = await builder.strategy("data").launch();
  try {
    const ds = datasets.synthetic({ inputShape: [28, 28, 1], classes: 10, size: batch * steps, seed: 1 });
    const run = await c.fit(buildDemoModel(model), ds, { epochs: 1, batchSize: batch, optimizer: "sgd", progress: false });
    const s = run.summary();
    const after = run.history.slice(s.warmupSteps).flatMap((h) => h.workers);
    const pick = (f: (w: (typeof after)[number]) => number): number => median(after.map(f));
    process.stdout.write(
      `${JSON.stringify({
        model,
        where,
        device: c.workers[0]!.info.device,
        software: c.workers[0]!.info.gpu?.software ?? null,
        samples_per_second: s.samplesPerSecond,
        compute_ms: pick((w) => w.computeMs - (w.readbackMs ?? 0) - (w.uploadMs ?? 0)),
        readback_ms: pick((w) => w.readbackMs ?? 0),
        upload_ms: pick((w) => w.uploadMs ?? 0),
        allreduce_ms: pick((w) => w.commMs + w.waitMs),
      })}\n`,
    );
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
