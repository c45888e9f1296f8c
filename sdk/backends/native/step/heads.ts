import type { LossName } from "../../../protocol/loss-names";
import type { StepArrays } from "./arrays";
import type { Schedule } from "./schedule";
import { labelsPerRow, lossAndGradient, type StepLoss } from "./loss";

/** What the step minimises: each output's loss and its weight in the total, and the classes' weights (one output). */
export interface StepObjective {
  heads: ReadonlyArray<{ loss: LossName; weight: number }>;
  classWeight?: readonly number[] | null;
}

/**
 * Each head's mean loss over its output's rows, and its gradient x weight x the head's weight
 * written into the output's gradient array (added, for a second head on the same output); the
 * total is the heads' weighted sum, as model.fit minimises it.
 */
export function headLosses(
  s: Schedule,
  a: StepArrays,
  o: StepObjective,
  ys: readonly Float32Array[],
  batch: number,
  weight: number,
  eps: number,
): { each: number[]; total: number } {
  const seeded = new Set<number>();
  const each = o.heads.map((h, k) => {
    const st = s.outputs[k]!;
    const out = a.values[s.slots.value[st]!]!.subarray(0, batch * s.sizes[st]!);
    const shape = s.outShapes[k]!;
    const cols = shape[shape.length - 1] ?? 1;
    const rows = out.length / cols;
    const t = ys[k]!;
    const into = s.grads[st] ? a.grads[s.slots.grad[st]!]!.subarray(0, out.length) : new Float32Array(out.length);
    const add = seeded.has(st);
    seeded.add(st);
    const dp = add ? new Float32Array(out.length) : into;
    const value = lossAndGradient(
      h.loss,
      out,
      t,
      dp,
      rows,
      cols,
      eps,
      weight * h.weight,
      rowWeights(o.classWeight ?? null, t, rows, cols, h.loss),
    );
    if (add) for (let i = 0; i < into.length; i++) into[i] = into[i]! + dp[i]!;
    return value;
  });
  return { each, total: each.reduce((sum, l, k) => sum + l * o.heads[k]!.weight, 0) };
}

/** Each row's class weight (classWeight): its class is its label, or its one-hot target's largest value (the first of ties). */
function rowWeights(
  table: readonly number[] | null,
  t: Float32Array,
  rows: number,
  cols: number,
  loss: StepLoss,
): Float32Array | null {
  if (!table) return null;
  const w = new Float32Array(rows);
  const perRow = labelsPerRow(loss, cols);
  for (let r = 0; r < rows; r++) {
    let c = 0;
    if (perRow === 1) c = t[r]! | 0;
    else for (let j = 1; j < cols; j++) if (t[r * cols + j]! > t[r * cols + c]!) c = j;
    w[r] = table[c] ?? 0;
  }
  return w;
}
