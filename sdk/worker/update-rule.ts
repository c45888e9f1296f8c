import * as tf from "@tensorflow/tfjs";
import type { OptimizerSpec } from "../spec/optimizer";
import { createOptimizer } from "./model-io";

/** Applies one optimizer step from the summed gradient, laid out flat as the variables in order. */
export interface UpdateRule {
  apply(flat: Float32Array): void;
  dispose(): void;
}

/** TF.js's own optimizers (tf.train.*): works on every backend. */
export class TfjsUpdate implements UpdateRule {
  private readonly optimizer: tf.Optimizer;

  constructor(private readonly vars: readonly tf.Variable[], spec: OptimizerSpec) {
    this.optimizer = createOptimizer(spec);
  }

  apply(flat: Float32Array): void {
    const named: tf.NamedTensorMap = {};
    let off = 0;
    for (const v of this.vars) {
      named[v.name] = tf.tensor(flat.subarray(off, off + v.size), v.shape, "float32");
      off += v.size;
    }
    this.optimizer.applyGradients(named);
    tf.dispose(Object.values(named));
  }

  dispose(): void {
    this.optimizer.dispose();
  }
}
