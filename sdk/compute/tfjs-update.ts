import * as tf from "@tensorflow/tfjs";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { CheckpointError } from "../errors/errors";
import { createOptimizer } from "../model/optimizers";
import { readTensor, tensorsFromFlat } from "./device-io";
import { exportAdamax, importAdamax, isAdamax } from "./adamax-state";
import type { OptimizerState } from "./optimizer-state";

export type { OptimizerState } from "./optimizer-state";

/** Applies one optimizer step from the summed gradient, laid out flat as the variables in order. */
export interface UpdateRule {
  /** With `learningRate` (a schedule's rate for this step), in place of the optimizer's own. */
  apply(flat: Float32Array, learningRate?: number): void;
  exportState(): Promise<OptimizerState>;
  importState(state: OptimizerState): Promise<void>;
  dispose(): void;
}

const ADAM_PRODUCTS = ["accBeta1", "accBeta2"] as const;

/** TF.js's own optimizers (tf.train.*): works on every backend. */
export class TfjsUpdate implements UpdateRule {
  private readonly optimizer: tf.Optimizer;

  constructor(
    private readonly vars: readonly tf.Variable[],
    spec: OptimizerSpec,
  ) {
    this.optimizer = createOptimizer(spec);
  }

  apply(flat: Float32Array, learningRate?: number): void {
    if (learningRate !== undefined) setRate(this.optimizer, learningRate);
    // On a device the summed gradient goes up in one upload, split there.
    const grads = tensorsFromFlat(
      flat,
      this.vars.map((v) => v.shape),
    );
    const named: tf.NamedTensorMap = {};
    this.vars.forEach((v, i) => (named[v.name] = grads[i]!));
    this.optimizer.applyGradients(named);
    tf.dispose(grads);
  }

  async exportState(): Promise<OptimizerState> {
    if (isAdamax(this.optimizer)) return exportAdamax(this.optimizer);
    const named = await this.optimizer.getWeights();
    const scalars: Record<string, number> = {};
    // Adam keeps beta1^t and beta2^t as running products; setWeights would recompute them with
    // pow, a rounding away from a replica that never stopped. Carry them exactly.
    for (const k of ADAM_PRODUCTS) {
      const v = (this.optimizer as unknown as Record<string, tf.Variable | undefined>)[k];
      if (v) scalars[k] = (await readTensor(v))[0]!;
    }
    const tensors: OptimizerState["tensors"] = [];
    for (const n of named)
      tensors.push({ name: n.name, data: Float32Array.from(await readTensor(n.tensor)), shape: [...n.tensor.shape] });
    return { format: "tfjs", tensors, scalars };
  }

  async importState(state: OptimizerState): Promise<void> {
    if (state.format !== "tfjs")
      throw new CheckpointError(
        `the optimizer state was written by meshtrain's ${state.format} optimizer; these workers use TF.js's`,
        { hint: "resume with the backend the checkpoint was made with (.backend(...))" },
      );
    if (isAdamax(this.optimizer)) return importAdamax(this.optimizer, state);
    const named = state.tensors.map((t) => ({ name: t.name, tensor: tf.tensor(t.data, t.shape, "float32") }));
    await this.optimizer.setWeights(named);
    for (const k of ADAM_PRODUCTS) {
      const v = (this.optimizer as unknown as Record<string, tf.Variable | undefined>)[k];
      const value = state.scalars[k];
      if (v && value !== undefined) v.assign(tf.scalar(value));
    }
  }

  dispose(): void {
    this.optimizer.dispose();
  }
}

/**
 * Sets a TF.js optimizer's learning rate for its next update: SGD and momentum keep it as a
 * tensor (setLearningRate remakes it); the others read their learningRate field when they apply.
 */
function setRate(optimizer: tf.Optimizer, rate: number): void {
  const o = optimizer as unknown as { learningRate: number; setLearningRate?: (r: number) => void };
  if (o.learningRate === rate) return;
  if (typeof o.setLearningRate === "function") o.setLearningRate(rate);
  else o.learningRate = rate;
}
