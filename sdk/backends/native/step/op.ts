import type * as tf from "@tensorflow/tfjs";
import type { NativeAddon } from "../addon";

/** What every op of a compiled step may use: the kernels, and a scratch buffer it does not keep. */
export interface StepContext {
  addon: NativeAddon;
  scratch(length: number): Float32Array;
  /** A variable's values, read in place (the update may have moved them since the last step). */
  values(v: tf.Variable): Float32Array;
  /** Where `grads[0]` lies in the flat gradient: 0, or (ZeRO-3) the first offset of the layer whose buffer it is. */
  gradientBase?: number;
}

/** Where one trainable variable's gradient goes in the flat gradient, or null for a frozen one. */
export interface GradientSlot {
  variable: tf.Variable;
  offset: number | null;
}

/**
 * One layer of a compiled replica step. Shapes are per sample; a batch's arrays are the caller's.
 * An op that only renames its input's shape (Flatten, Reshape) is an alias and computes nothing.
 */
export interface StepOp {
  readonly layer: string;
  readonly outShape: readonly number[];
  readonly alias: boolean;
  /** Whether the op holds trainable variables (so the ops before it need their input gradients). */
  readonly trainable: boolean;
  /** Where its variables' gradients start in the flat gradient; null when it has none. */
  readonly gradientFrom: number | null;
  forward(ctx: StepContext, x: Float32Array, out: Float32Array, batch: number): void;
  /**
   * Writes its variables' gradients into `grads` and, when dx is given, dL/dx. `dy` holds
   * dL/d(out) and may be overwritten. `written` is called once its variables' gradients are
   * final, before dx is computed (their all-reduce may start meanwhile).
   */
  backward(ctx: StepContext, x: Float32Array, out: Float32Array, dy: Float32Array, dx: Float32Array | null, batch: number, grads: Float32Array, written?: () => void): void;
}

export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Where a trainable slot's gradient goes: its view of the flat gradient (or of its layer's part of it). */
export function gradientView(slot: GradientSlot & { offset: number }, grads: Float32Array, ctx: StepContext): Float32Array {
  const at = slot.offset - (ctx.gradientBase ?? 0);
  return grads.subarray(at, at + slot.variable.size);
}

/** Where the first of these slots' gradients starts, or null when none takes one. */
export function firstOffset(...slots: Array<GradientSlot | null>): number | null {
  const at = slots.map(trained).flatMap((s) => (s ? [s.offset] : []));
  return at.length > 0 ? Math.min(...at) : null;
}

/** The slot, when it takes a gradient. */
export function trained(slot: GradientSlot | null): (GradientSlot & { offset: number }) | null {
  return slot && slot.offset !== null ? (slot as GradientSlot & { offset: number }) : null;
}
