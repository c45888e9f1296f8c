import type { EpochHistory, EpochValidation, StepRecord } from "./records";

/**
 * Each epoch's loss and compiled metrics as model.fit's History reports them: the mean over the
 * epoch's steps weighted by their samples. A skipped step (nonFinite "skip") trained nothing and
 * is left out, as its loss is not a number. Validation adds val_loss and val_ of each metric.
 */
export function epochHistory(steps: readonly StepRecord[], validation: readonly EpochValidation[] = []): EpochHistory {
  const sums = new Map<number, { samples: number; values: Map<string, number> }>();
  for (const s of steps) {
    if (s.skipped) continue;
    const e = sums.get(s.epoch) ?? { samples: 0, values: new Map<string, number>() };
    sums.set(s.epoch, e);
    e.samples += s.samples;
    for (const [k, v] of [["loss", s.loss] as const, ...Object.entries(s.metrics ?? {})])
      e.values.set(k, (e.values.get(k) ?? 0) + v * s.samples);
  }
  const epochs = [...sums.keys()].sort((a, b) => a - b);
  const history: Record<string, number[]> = {};
  for (const epoch of epochs) {
    const e = sums.get(epoch)!;
    for (const [k, v] of e.values) (history[k] ??= []).push(v / e.samples);
    const val = validation.find((x) => x.epoch === epoch);
    for (const [k, v] of Object.entries(val?.logs ?? {})) (history[k] ??= []).push(v);
  }
  return { epoch: epochs, history };
}
