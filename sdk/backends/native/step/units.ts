import type * as tf from "@tensorflow/tfjs";
import type { Schedule, ScheduledOp } from "./schedule";

/** Where the first of an op's trained weights lies in the flat gradient, or null when it trains none. */
export function minOffset(o: ScheduledOp): number | null {
  const at = o.op.params.flatMap((p) => (p.offset === null ? [] : [p.offset]));
  return at.length ? Math.min(...at) : null;
}

/**
 * Whether the trained weights lie in the flat gradient in the order of the ops that use them,
 * each used by one op: then once op k's backward pass is done, every gradient from its first
 * offset on is final (the backward pass runs the ops last first), and each op's weights are one
 * range (a unit ZeRO-3 gathers).
 */
export function layerOrder(s: Schedule): boolean {
  const owner = new Map<tf.Variable, number>();
  const slots: Array<{ offset: number; op: number }> = [];
  for (const [k, o] of s.ops.entries()) {
    for (const p of o.op.params) {
      if (p.offset === null) continue;
      const seen = owner.get(p.variable);
      if (seen !== undefined && seen !== k) return false;
      if (seen === undefined) slots.push({ offset: p.offset, op: k });
      owner.set(p.variable, k);
    }
  }
  slots.sort((a, b) => a.offset - b.offset);
  return slots.every((sl, i) => i === 0 || sl.op >= slots[i - 1]!.op);
}
