import * as tf from "@tensorflow/tfjs";
import { StateError } from "../../errors/errors";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import { NATIVE_BACKEND, type NativeBackend } from "../../backends/native/backend";
import { assignFlat, readConcat } from "../device-io";
import type { UpdateRule } from "../tfjs-update";
import { ownValues } from "../native-update";
import { makeUpdateRule } from "../update-rule";

/**
 * ZeRO stage 1 on one replica: the optimizer's state for this replica's shard of the flat
 * parameters only, in one flat variable that spans tensor boundaries. Every optimizer the
 * workers have is elementwise (each value's update reads only its own gradient and slots), so
 * updating a shard at once gives the same bits as updating each variable whole.
 */
export class OptimizerShard {
  private constructor(
    /** [start, end) of the flat parameters this replica updates. */
    readonly start: number,
    readonly end: number,
    /** The shard's weights, which its update rule changes (in place on the native backend). */
    private readonly weights: tf.Variable,
    private readonly update: UpdateRule,
  ) {}

  /** The shard [start, end) of `vars` flattened, with `spec`'s state for it alone. */
  static async of(vars: readonly tf.Variable[], spec: OptimizerSpec, start: number, end: number): Promise<OptimizerShard> {
    const all = await readConcat(vars);
    const weights = tf.variable(tf.tensor1d(all.slice(start, end)), true, `zero_shard_${Math.random().toString(36).slice(2)}`);
    return new OptimizerShard(start, end, weights, makeUpdateRule([weights], spec));
  }

  /** Checks the ring still gives this replica the shard it holds state for. */
  holds(start: number, end: number): void {
    if (start !== this.start || end !== this.end) {
      throw new StateError(`this replica holds optimizer state for parameters [${this.start}, ${this.end}) but the ring now gives it [${start}, ${end}): re-sharding is not built`);
    }
  }

  /** The summed gradient of the shard through the optimizer; the shard's new weights written into `out` at [start, end). */
  async step(gradient: Float32Array, out: Float32Array, learningRate?: number): Promise<void> {
    this.update.apply(gradient, learningRate);
    await readConcat([this.weights], out.subarray(this.start, this.end));
  }

  dispose(): void {
    this.update.dispose();
    this.weights.dispose();
  }
}

/**
 * The model's variables set to `flat` (all of them, in order): in place on the native
 * backend, whose variables own their memory; elsewhere through new tensors of a copy, since a
 * tensor made from an array keeps that array and `flat` is used again.
 */
export function writeWeights(vars: readonly tf.Variable[], flat: Float32Array): void {
  if (tf.getBackend() !== NATIVE_BACKEND) return assignFlat(vars, flat.slice());
  const b = tf.backend() as NativeBackend;
  let off = 0;
  for (const v of vars) {
    ownValues(b, v).set(flat.subarray(off, off + v.size));
    off += v.size;
  }
}
