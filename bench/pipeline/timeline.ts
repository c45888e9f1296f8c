import * as tf from "@tensorflow/tfjs";
import type { StepRecord, WorkerStepRecord } from "../../sdk/index";
import { fitParts, setupFromArgs } from "./fit-setup";

/**
 * Where a pipeline's step time goes: one fit as bench:pipeline runs it, then every step's time
 * and measured bubble, and for a few steps each worker's forwards (F) and backwards (B) of
 * micro-batches on the driver's clock, from the step's first start. Comparing them with the
 * plan's per-stage costs shows which action or hand-off the prediction misses.
 *
 * usage: node timeline.js <strategy> <workers> <stages> <microBatches> <schedule> <model> <batch> <steps> [first [last]]
 *   prints steps first..last (default 6..8) in detail.
 */

function actionsLine(rec: StepRecord, w: WorkerStepRecord, t0: number): string {
  const at = (ms: number): string => (w.startMs - t0 + ms).toFixed(1);
  const acts = (w.actions ?? []).map((a) => `${a.kind}${a.micro} ${at(a.start)}-${at(a.end)}`).join("  ");
  return `  step ${rec.step} rank ${w.rank} (stage ${w.stage ?? 0}, replica ${w.replica ?? w.rank}): compute ${w.computeMs.toFixed(1)} ms, wait ${w.waitMs.toFixed(1)} ms | ${acts}`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const setup = setupFromArgs(args);
  const first = Number(args[8] ?? 6);
  const last = Number(args[9] ?? first + 2);
  tf.enableProdMode();
  const { model, data, loss, builder } = fitParts(setup);
  const c = await builder.launch();
  try {
    const run = await c.fit(model, data, { epochs: 1, batchSize: setup.batch, optimizer: { name: "sgd", learningRate: 0.001 }, shuffle: false, loss });
    const p = run.plan.prediction;
    const out: string[] = [];
    if (p) out.push(`predicted: ${p.stepMs.toFixed(1)} ms a step, bubble ${p.bubble.toFixed(2)} (${p.basis})`);
    out.push(`measured step ms: ${run.history.map((s) => s.ms.toFixed(0)).join(" ")}`);
    out.push(`measured bubble:  ${run.history.map((s) => (s.bubble ?? 0).toFixed(2)).join(" ")}`);
    for (const rec of run.history.slice(first, last + 1)) {
      const t0 = Math.min(...rec.workers.map((w) => w.startMs));
      out.push(`step ${rec.step}: ${rec.ms.toFixed(1)} ms, bubble ${(rec.bubble ?? 0).toFixed(2)}`);
      for (const w of rec.workers) out.push(actionsLine(rec, w, t0));
    }
    process.stdout.write(`${out.join("\n")}\n`);
  } finally {
    await c.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
