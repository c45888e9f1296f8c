import * as tf from "@tensorflow/tfjs";
import { StateError } from "../../errors/errors";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import { NATIVE_BACKEND, type NativeBackend } from "../../backends/native/backend";
import { assignFlat, readConcat, readTensor } from "../../compute/device-io";
import type { UpdateRule } from "../../compute/tfjs-update";
import { NativeUpdate, ownValues, type NativeOptimizerSpec } from "../../compute/native-update";
import { hasNativeKernel, makeUpdateRule } from "../../compute/update-rule";
import { ShardState } from "./shard-state";

/** The part [from, to) of variable v's values that falls in a shard of the flat parameters. */
export interface ShardPart {
  v: tf.Variable;
  from: number;
  to: number;
}

/** Where the flat range [start, end) of `vars` lies in each variable it touches. */
export function partsOf(vars: readonly tf.Variable[], start: number, end: number): ShardPart[] {
  const parts: ShardPart[] = [];
  let off = 0;
  for (const v of vars) {
    const from = Math.max(start, off) - off;
    const to = Math.min(end, off + v.size) - off;
    if (to > from) parts.push({ v, from, to });
    off += v.size;
  }
  return parts;
}

/**
 * ZeRO stage 1 on one replica: the optimizer's state for this replica's shard of the flat
 * parameters only, spanning tensor boundaries. Every optimizer the workers have is elementwise
 * (each value's update reads only its own gradient and slots), so updating a shard at once
 * gives the same bits as updating each variable whole. On the native backend the shard is
 * updated in place in the model's own variables (no copy of its weights is kept); elsewhere in
 * one flat variable of its own, read back after each update.
 */
export class OptimizerShard {
  private constructor(
    /** [start, end) of the flat parameters this replica updates. */
    readonly start: number,
    readonly end: number,
    private readonly update: UpdateRule,
    private readonly parts: readonly ShardPart[],
    /** The shard's weights where they are not updated in place; null on the native backend. */
    private readonly weights: tf.Variable | null,
  ) {}

  /** The shard [start, end) of `vars` flattened, with `spec`'s state for it alone. */
  static async of(
    vars: readonly tf.Variable[],
    spec: OptimizerSpec,
    start: number,
    end: number,
  ): Promise<OptimizerShard> {
    const parts = partsOf(vars, start, end);
    if (updatesInPlace(spec)) {
      const rule = new NativeUpdate(
        tf.backend() as NativeBackend,
        parts.map((p) => p.v),
        spec,
        parts.map((p) => [p.from, p.to] as const),
      );
      return new OptimizerShard(start, end, rule, parts, null);
    }
    const values = new Float32Array(end - start);
    let off = 0;
    for (const p of parts) {
      values.set((await readTensor(p.v)).subarray(p.from, p.to), off);
      off += p.to - p.from;
    }
    const initial = tf.tensor1d(values);
    const weights = tf.variable(initial, true, `zero_shard_${Math.random().toString(36).slice(2)}`);
    initial.dispose();
    return new OptimizerShard(start, end, makeUpdateRule([weights], spec), parts, weights);
  }

  /** Its optimizer state for checkpoints: the update's tensors are the parts (in place), or one shard of its own. */
  state(): ShardState {
    return new ShardState(
      this.update,
      [[this.start, this.end]],
      this.weights ? [this.end - this.start] : this.parts.map((p) => p.to - p.from),
    );
  }

  /** Checks the ring still gives this replica the shard it holds state for. */
  holds(start: number, end: number): void {
    if (start !== this.start || end !== this.end) {
      throw new StateError(
        `this replica holds optimizer state for parameters [${this.start}, ${this.end}) but the ring now gives it [${start}, ${end}): re-sharding is not built`,
      );
    }
  }

  /** Whether the update writes the shard's new weights into the model's own variables (the native backend). */
  get inPlace(): boolean {
    return this.weights === null;
  }

  /** The summed gradient of the shard through the optimizer; the shard's new weights written into `out` at [start, end) (null: in place, they are in the variables). */
  async step(gradient: Float32Array, out: Float32Array | null, learningRate?: number): Promise<void> {
    this.update.apply(gradient, learningRate);
    if (!out) return;
    if (this.weights) {
      await readConcat([this.weights], out.subarray(this.start, this.end));
      return;
    }
    const b = tf.backend() as NativeBackend;
    let off = this.start;
    for (const p of this.parts) {
      out.set(b.values(p.v).subarray(p.from, p.to), off);
      off += p.to - p.from;
    }
  }

  dispose(): void {
    this.update.dispose();
    this.weights?.dispose();
  }
}

/** Whether a shard is updated in place in the model's own variables here: the native backend, an optimizer with a native kernel. */
export function updatesInPlace(spec: OptimizerSpec): spec is NativeOptimizerSpec {
  return tf.getBackend() === NATIVE_BACKEND && hasNativeKernel(spec);
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
