import * as tf from "@tensorflow/tfjs";
import type { OptimizerState } from "./optimizer-state";

/** TF.js's Adamax keeps its slots in fields its getWeights() does not export ("not implemented for Adamax yet"). */
interface AdamaxFields {
  accumulatedFirstMoment: Array<{ originalName: string; variable: tf.Variable } | undefined>;
  accumulatedWeightedInfNorm: Array<{ originalName: string; variable: tf.Variable } | undefined>;
  iteration: tf.Variable;
  accBeta1: tf.Variable;
}

/** Whether `opt` is TF.js's Adamax, whose state is carried here rather than by getWeights(). */
export function isAdamax(opt: tf.Optimizer): boolean {
  return opt.getClassName() === "Adamax";
}

/** Adamax's moments (per variable, in the variables' order: m then v) and its two counters, read exactly. */
export async function exportAdamax(opt: tf.Optimizer): Promise<OptimizerState> {
  const a = opt as unknown as AdamaxFields;
  const tensors: OptimizerState["tensors"] = [];
  const slots = [a.accumulatedFirstMoment, a.accumulatedWeightedInfNorm];
  for (let i = 0; i < a.accumulatedFirstMoment.length; i++) {
    for (const slot of slots) {
      const s = slot[i];
      if (s)
        tensors.push({
          name: s.originalName,
          data: Float32Array.from(await s.variable.data()),
          shape: [...s.variable.shape],
        });
    }
  }
  return {
    format: "tfjs",
    tensors,
    scalars: { iteration: (await a.iteration.data())[0]!, accBeta1: (await a.accBeta1.data())[0]! },
  };
}

/** Puts back what exportAdamax read: the slots in order, and the counters. */
export function importAdamax(opt: tf.Optimizer, state: OptimizerState): void {
  const a = opt as unknown as AdamaxFields;
  const made = (t: OptimizerState["tensors"][number]) => ({
    originalName: t.name,
    variable: tf.variable(tf.tensor(t.data, t.shape, "float32"), false),
  });
  for (const s of [...a.accumulatedFirstMoment, ...a.accumulatedWeightedInfNorm]) s?.variable.dispose();
  a.accumulatedFirstMoment = state.tensors.filter((_, k) => k % 2 === 0).map(made);
  a.accumulatedWeightedInfNorm = state.tensors.filter((_, k) => k % 2 === 1).map(made);
  if (state.scalars.iteration !== undefined) a.iteration.assign(tf.scalar(state.scalars.iteration));
  if (state.scalars.accBeta1 !== undefined) a.accBeta1.assign(tf.scalar(state.scalars.accBeta1));
}
