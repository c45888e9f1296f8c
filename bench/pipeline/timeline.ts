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

/** Driver-clock time from the previous step's end to the first worker's start, and from the last action's end to this step's end. */
function gapsOf(rec: StepRecord): { before: number; after: number } {
  const t0 = Math.min(...rec.workers.map((w) => w.startMs));
  const lastEnd = Math.max(...rec.workers.map((w) => w.startMs + Math.max(0, ...(w.actions ?? []).map((a) => a.end))));
  return { before: t0 - (rec.endMs - rec.ms), after: rec.endMs - lastEnd };
}

/** A stage's forwards and backwards in all, per step: the plan's against the median over steps and the stage's workers. */
function busyLine(history: readonly StepRecord[], stage: number, predicted: ReadonlyArray<{ kind: "F" | "B"; start: number; end: number }>): string {
  const sum = (acts: ReadonlyArray<{ kind: "F" | "B"; start: number; end: number }>, kind: "F" | "B"): number => acts.filter((a) => a.kind === kind).reduce((n, a) => n + a.end - a.start, 0);
  const workers = history.flatMap((r) => r.workers.filter((w) => (w.stage ?? 0) === stage));
  const measured = (kind: "F" | "B"): number => median(workers.map((w) => sum(w.actions ?? [], kind)));
  return `stage ${stage} busy per step: forwards ${measured("F").toFixed(1)} ms (plan ${sum(predicted, "F").toFixed(1)}), backwards ${measured("B").toFixed(1)} ms (plan ${sum(predicted, "B").toFixed(1)})`;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
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
    for (const [stage, acts] of (p?.actions ?? []).entries()) out.push(`  predicted stage ${stage}: ${acts.map((a) => `${a.kind}${a.micro} ${a.start.toFixed(1)}-${a.end.toFixed(1)}`).join("  ")}`);
    out.push(`measured step ms: ${run.history.map((s) => s.ms.toFixed(0)).join(" ")} (median after the first ${median(run.history.slice(1).map((s) => s.ms)).toFixed(1)})`);
    out.push(`measured bubble:  ${run.history.map((s) => (s.bubble ?? 0).toFixed(2)).join(" ")}`);
    for (const [stage, acts] of (p?.actions ?? []).entries()) out.push(busyLine(run.history.slice(1), stage, acts));
    const gaps = run.history.slice(1).map(gapsOf);
    out.push(`median ms before the first worker started ${median(gaps.map((g) => g.before)).toFixed(1)}, after the last action ended ${median(gaps.map((g) => g.after)).toFixed(1)}, their sum ${median(gaps.map((g) => g.before + g.after)).toFixed(1)}`);
    for (const rec of run.history.slice(first, last + 1)) {
      const t0 = Math.min(...rec.workers.map((w) => w.startMs));
      const g = gapsOf(rec);
      out.push(`step ${rec.step}: ${rec.ms.toFixed(1)} ms, bubble ${(rec.bubble ?? 0).toFixed(2)}; ${g.before.toFixed(1)} ms before the first worker started, ${g.after.toFixed(1)} ms after the last action ended`);
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
