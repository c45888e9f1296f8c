import type * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../../protocol/loss-names";
import type { Tensorlike } from "../../../protocol/tensor";
import type { NativeBackend } from "../backend";
import { compileStep } from "./compile";
import { labelsPerRow, lossAndGradient, type StepLoss } from "./loss";
import { sizeOf, type StepContext, type StepOp } from "./op";

/** A batch size's arrays: [input, each op's output] and dL/d of each. */
interface Buffers {
  values: Float32Array[];
  grads: Float32Array[];
}

/** A model's native step, or why it trains by TF.js's autodiff. */
export type StepChoice = { native: NativeStep; why?: undefined } | { native: null; why: string };

/**
 * What a ZeRO-3 step does around each op that holds trainable variables (a unit): gather its
 * weights before its forward and its backward (the hook knows whether they are still there),
 * give it a buffer for its gradients, and take them once written. Every replica calls these in
 * the same order, since each is one side of a collective.
 */
export interface UnitHooks {
  /** `pass`: the forward pass goes up the layers, the backward down (a hook may gather the next unit ahead). */
  gather(op: number, pass: "forward" | "backward"): Promise<void>;
  /** The buffer op's gradients are written into, and where it starts in the flat gradient. */
  gradients(op: number): { grads: Float32Array; base: number };
  reduced(op: number): Promise<void>;
}

/**
 * The replica step of a compiled model: forward, loss and backward by meshtrain's native
 * kernels on arrays it keeps, with no TF.js tensor made and no autodiff tape recorded. The
 * gradient is written straight into the flat buffer the all-reduce sends. Equal to TF.js's
 * gradient up to float32 rounding (test/unit/native-step.test.ts).
 */
export class NativeStep {
  /** Arrays for the largest batch seen; a smaller batch (an epoch's last) computes in views of their first rows. */
  private largest: { batch: number; arrays: Buffers } | null = null;
  /** Views of `largest` by batch size, so a step makes no new arrays. */
  private readonly views = new Map<number, Buffers>();
  private readonly ctx: StepContext;
  private readonly cols: number;
  /** needInput[i]: op i must compute dL/d(its input), because an op before it holds trainable variables. */
  private readonly needInput: boolean[];
  /**
   * Whether the ops' gradients lie in the flat gradient in layer order, so that once op i's are
   * written, every gradient from op i's first offset on is final (the backward pass goes last
   * layer first).
   */
  private readonly inOrder: boolean;

  private constructor(backend: NativeBackend, private readonly ops: StepOp[], private readonly loss: StepLoss, private readonly inShape: number[], private readonly eps: number) {
    this.ctx = { addon: backend.addon, scratch: (n) => backend.scratch(n), values: (v) => backend.values(v) };
    const out = ops[ops.length - 1]?.outShape ?? inShape;
    this.cols = out[out.length - 1] ?? 1;
    let before = false;
    this.needInput = ops.map((op) => {
      const need = before;
      before ||= op.trainable;
      return need;
    });
    const starts = ops.map((op) => op.gradientFrom).filter((f): f is number => f !== null);
    this.inOrder = starts.every((f, i) => i === 0 || f > starts[i - 1]!);
  }

  /** The model's native step, or why it has none (it then trains by TF.js's autodiff). */
  static compile(backend: NativeBackend, model: tf.LayersModel, loss: LossName, vars: readonly tf.Variable[]): StepChoice {
    const plan = compileStep(model, loss, vars);
    if (!plan.ok) return { native: null, why: plan.why };
    return { native: new NativeStep(backend, plan.ops, plan.loss, plan.inShape, Math.fround(backend.epsilon())) };
  }

  /** The shape of one sample the model takes. */
  get inputShape(): readonly number[] {
    return this.inShape;
  }

  get outShape(): readonly number[] {
    return this.ops[this.ops.length - 1]?.outShape ?? this.inShape;
  }

  /**
   * weight x dL/dvars of the slice's mean loss into `grads` (laid out as the variables), and the
   * mean loss; `out` is the model's output for the slice, valid until the next call. `ready(from)`
   * says, during the backward pass, that grads[from..] are final.
   */
  run(x: Tensorlike, y: Tensorlike, weight: number, grads: Float32Array, ready?: (from: number) => void): { loss: number; out: Float32Array } {
    const batch = x.shape[0]!;
    this.check(x, y, batch);
    const b = this.buffersFor(batch);
    const vals = b.values.slice();
    vals[0] = x.data instanceof Float32Array ? x.data : Float32Array.from(x.data);
    this.ops.forEach((op, i) => {
      if (op.alias) vals[i + 1] = vals[i]!;
      else op.forward(this.ctx, vals[i]!, vals[i + 1]!, batch);
    });
    const out = vals[this.ops.length]!;
    const target = y.data instanceof Float32Array ? y.data : Float32Array.from(y.data);
    const loss = lossAndGradient(this.loss, out, target, b.grads[this.ops.length]!, out.length / this.cols, this.cols, this.eps, weight);
    for (let i = this.ops.length - 1; i >= 0; i--) {
      const op = this.ops[i]!;
      const from = op.gradientFrom;
      const written = ready && this.inOrder && from !== null ? () => ready(from) : undefined;
      if (!op.alias) op.backward(this.ctx, vals[i]!, vals[i + 1]!, b.grads[i + 1]!, this.needInput[i] ? b.grads[i]! : null, batch, grads, written);
    }
    return { loss, out };
  }

  /** The ops that hold trainable variables, in layer order, and where each one's gradients start in the flat gradient; null where they do not lie in layer order. */
  get units(): Array<{ op: number; from: number }> | null {
    if (!this.inOrder) return null;
    return this.ops.flatMap((op, i) => (op.trainable && op.gradientFrom !== null ? [{ op: i, from: op.gradientFrom }] : []));
  }

  /** run() with each unit's weights gathered before its forward and backward pass, and its gradients handed over unit by unit (ZeRO-3). */
  async runGathered(x: Tensorlike, y: Tensorlike, weight: number, hooks: UnitHooks): Promise<{ loss: number; out: Float32Array }> {
    const batch = x.shape[0]!;
    this.check(x, y, batch);
    // An empty slice computes nothing but takes its part in every unit's collectives (its gradients zero).
    const idle = batch === 0;
    const b = this.buffersFor(batch);
    const vals = b.values.slice();
    vals[0] = x.data instanceof Float32Array ? x.data : Float32Array.from(x.data);
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i]!;
      if (op.trainable) await hooks.gather(i, "forward");
      if (op.alias) vals[i + 1] = vals[i]!;
      else if (!idle) op.forward(this.ctx, vals[i]!, vals[i + 1]!, batch);
    }
    const out = vals[this.ops.length]!;
    const target = y.data instanceof Float32Array ? y.data : Float32Array.from(y.data);
    const loss = idle ? 0 : lossAndGradient(this.loss, out, target, b.grads[this.ops.length]!, out.length / this.cols, this.cols, this.eps, weight);
    for (let i = this.ops.length - 1; i >= 0; i--) {
      const op = this.ops[i]!;
      const dx = this.needInput[i] ? b.grads[i]! : null;
      if (!op.trainable) {
        if (!op.alias && !idle) op.backward(this.ctx, vals[i]!, vals[i + 1]!, b.grads[i + 1]!, dx, batch, new Float32Array(0));
        continue;
      }
      await hooks.gather(i, "backward");
      const { grads, base } = hooks.gradients(i);
      if (!idle) op.backward({ ...this.ctx, gradientBase: base }, vals[i]!, vals[i + 1]!, b.grads[i + 1]!, dx, batch, grads);
      await hooks.reduced(i);
    }
    return { loss, out };
  }

  private check(x: Tensorlike, y: Tensorlike, batch: number): void {
    const xs = x.shape.slice(1);
    if (xs.length !== this.inShape.length || xs.some((d, i) => d !== this.inShape[i])) {
      throw new Error(`the model takes samples of shape [${this.inShape.join(", ")}], not [${xs.join(", ")}]`);
    }
    const want = batch * (sizeOf(this.outShape) / this.cols) * labelsPerRow(this.loss, this.cols);
    if (y.shape[0] !== batch || sizeOf(y.shape) !== want) {
      throw new Error(`the ${this.loss} loss takes targets of shape [${batch}, ${this.outShape.join(", ")}]${this.loss === "sparseCategoricalCrossentropy" ? " (or one class index per sample)" : ""}, not [${y.shape.join(", ")}]`);
    }
  }

  private buffersFor(batch: number): Buffers {
    const seen = this.views.get(batch);
    if (seen) return seen;
    // A set of arrays per batch size held an epoch's last batch's beside the full batch's: 1.9x the memory.
    if (!this.largest || batch > this.largest.batch) {
      this.largest = { batch, arrays: this.allocate(batch) };
      this.views.clear();
    }
    // Array i holds the input (i = 0) or op i-1's output, a row of this many values a sample.
    const rows = (a: Float32Array, i: number): Float32Array => a.subarray(0, batch * sizeOf(i === 0 ? this.inShape : this.ops[i - 1]!.outShape));
    const { arrays } = this.largest;
    const b: Buffers = { values: arrays.values.map(rows), grads: arrays.grads.map(rows) };
    this.views.set(batch, b);
    return b;
  }

  private allocate(batch: number): Buffers {
    // values[0] is the batch's input, set by run; an alias op's arrays are its input's.
    const values: Float32Array[] = [new Float32Array(0)];
    // Nothing before the first op trains, so the input's gradient is never asked for.
    const grads: Float32Array[] = [new Float32Array(0)];
    this.ops.forEach((op, i) => {
      const n = batch * sizeOf(op.outShape);
      values.push(op.alias ? values[i]! : new Float32Array(n));
      grads.push(op.alias ? grads[i]! : new Float32Array(n));
    });
    return { values, grads };
  }
}
