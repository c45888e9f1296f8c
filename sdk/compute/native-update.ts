import * as tf from "@tensorflow/tfjs";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { CheckpointError } from "../errors/errors";
import type { OptimizerState, UpdateRule } from "./tfjs-update";
import type { NativeBackend } from "../backends/native/backend";

const f32 = Math.fround;

/** The optimizers with native kernels. */
export type NativeOptimizerSpec = Extract<OptimizerSpec, { name: "sgd" | "momentum" | "adam" | "rmsprop" }>;

/**
 * A native-backend variable's values, exclusively its own, to write in place: one whose memory
 * is shared with another tensor is copied first, so no tensor anyone else can read ever changes.
 */
export function ownValues(b: NativeBackend, v: tf.Variable): Float32Array {
  if (b.refCount(v.dataId) > 1) {
    const copy = tf.tensor(Float32Array.from(b.values(v)), v.shape, "float32");
    v.assign(copy);
    copy.dispose();
  }
  return b.values(v);
}

/**
 * Optimizer steps computed in place on the variables' own memory by the native kernels, in the
 * same float32 operations, in the same order, as tf.train's optimizers (test/unit checks they
 * agree). A variable whose memory is shared with another tensor is copied first, so no tensor
 * anyone else can read ever changes.
 */
export class NativeUpdate implements UpdateRule {
  private readonly state: Float32Array[][];
  private accBeta1 = 0;
  private accBeta2 = 0;

  /** [from, to) of each variable's values this rule updates: all of them, or (sharded) a part. */
  private readonly ranges: ReadonlyArray<readonly [number, number]>;

  constructor(
    private readonly backend: NativeBackend,
    private readonly vars: readonly tf.Variable[],
    private readonly spec: NativeOptimizerSpec,
    ranges?: ReadonlyArray<readonly [number, number]>,
  ) {
    const slots =
      spec.name === "sgd" ? 0 : spec.name === "momentum" ? 1 : spec.name === "adam" ? 2 : spec.centered ? 3 : 2;
    this.ranges = ranges ?? vars.map((v) => [0, v.size] as const);
    this.state = this.ranges.map(([from, to]) => Array.from({ length: slots }, () => new Float32Array(to - from)));
    if (spec.name === "adam") {
      this.accBeta1 = f32(spec.beta1);
      this.accBeta2 = f32(spec.beta2);
    }
  }

  apply(flat: Float32Array, learningRate?: number): void {
    const a = this.backend.addon;
    const s = learningRate === undefined ? this.spec : { ...this.spec, learningRate };
    const eps = f32(this.backend.epsilon());
    let off = 0;
    this.vars.forEach((v, i) => {
      const [from, to] = this.ranges[i]!;
      const g = flat.subarray(off, off + to - from);
      off += to - from;
      const w = ownValues(this.backend, v).subarray(from, to);
      const st = this.state[i]!;
      switch (s.name) {
        case "sgd":
          a.sgd(w, g, f32(-s.learningRate));
          break;
        case "momentum":
          a.momentum(w, st[0]!, g, f32(-s.learningRate), f32(s.momentum), s.useNesterov ? 1 : 0);
          break;
        case "adam":
          a.adam(
            w,
            st[0]!,
            st[1]!,
            g,
            f32(s.beta1),
            f32(1 - s.beta1),
            f32(s.beta2),
            f32(1 - s.beta2),
            f32(1 - this.accBeta1),
            f32(1 - this.accBeta2),
            f32(s.epsilon ?? eps),
            f32(-s.learningRate),
          );
          break;
        case "rmsprop":
          a.rmsprop(
            w,
            st[0]!,
            st[1]!,
            s.centered ? st[2]! : null,
            g,
            f32(s.decay),
            f32(1 - s.decay),
            f32(s.momentum),
            f32(s.learningRate),
            f32(s.epsilon ?? eps),
            s.centered ? 1 : 0,
          );
          break;
      }
    });
    if (s.name === "adam") {
      this.accBeta1 = f32(this.accBeta1 * f32(s.beta1));
      this.accBeta2 = f32(this.accBeta2 * f32(s.beta2));
    }
  }

  exportState(): Promise<OptimizerState> {
    return Promise.resolve({
      format: "native",
      tensors: this.state.flatMap((slots, i) =>
        slots.map((d, j) => ({ name: `${i}/${j}`, data: Float32Array.from(d), shape: [d.length] })),
      ),
      scalars: { accBeta1: this.accBeta1, accBeta2: this.accBeta2 },
    });
  }

  importState(state: OptimizerState): Promise<void> {
    if (state.format !== "native") {
      return Promise.reject(
        new CheckpointError(
          `the optimizer state was written by TF.js's optimizer; these workers use meshtrain's native one`,
          { hint: "resume with the backend the checkpoint was made with (.backend(...))" },
        ),
      );
    }
    const want = this.state.reduce((a, s) => a + s.length, 0);
    if (state.tensors.length !== want)
      return Promise.reject(
        new CheckpointError(
          `the optimizer state has ${state.tensors.length} slots; this model and optimizer need ${want}`,
        ),
      );
    let k = 0;
    for (const slots of this.state) {
      for (const slot of slots) {
        const t = state.tensors[k++]!;
        if (t.data.length !== slot.length)
          return Promise.reject(
            new CheckpointError(
              `optimizer slot ${t.name} has ${t.data.length} values; the variable has ${slot.length}`,
            ),
          );
        slot.set(t.data);
      }
    }
    this.accBeta1 = state.scalars.accBeta1 ?? this.accBeta1;
    this.accBeta2 = state.scalars.accBeta2 ?? this.accBeta2;
    return Promise.resolve();
  }

  dispose(): void {
    this.state.length = 0;
  }
}
