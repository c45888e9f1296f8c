import type * as tf from "@tensorflow/tfjs";
import type { NativeAddon } from "../addon";

/** Where one weight's gradient goes in the flat gradient; offset null for a weight not trained (frozen). */
export interface ParamSlot {
  variable: tf.Variable;
  offset: number | null;
}

/** What every op of a compiled step may use. */
export interface StepContext {
  addon: NativeAddon;
  /** The convolutions' column buffer (shared by every op, one call at a time). */
  columns(length: number): Float32Array;
  /** A weight's values, read in place (the update, or ZeRO-3's gathers, may have moved them since the last step). */
  values(v: tf.Variable): Float32Array;
  /**
   * Where a trained weight's gradient goes this step, and whether to add to it (a layer called
   * more than once adds each call's part); null for a weight not trained.
   */
  grad(slot: ParamSlot): { view: Float32Array; add: boolean } | null;
}

/** The arrays of one op's call, for `batch` samples. */
export interface OpIO {
  batch: number;
  /** Its inputs' values. */
  x: readonly Float32Array[];
  /** Its outputs' values (written by forward). */
  y: readonly Float32Array[];
  /** The mask its layer receives (1 keeps, 0 masks), or null. */
  mask: Float32Array | null;
  /** Arrays it asked for with `saved`, kept from its forward to its backward. */
  saved: readonly Float32Array[];
  /** Arrays it asked for with `temps`, valid within one call. */
  temp: readonly Float32Array[];
}

export interface GradIO extends OpIO {
  /** dL/d(outputs); the op may overwrite them. */
  dy: readonly Float32Array[];
  /** Where dL/d(inputs) go; null for an input nothing needs the gradient of. */
  dx: ReadonlyArray<Float32Array | null>;
  /** Whether dL/d(input i) is added to what dx[i] holds (the input is read elsewhere too) rather than written. */
  addDx: readonly boolean[];
  /** Called once the op's weight gradients are final, before it computes dx (their all-reduce may start). */
  paramsDone(): void;
}

/**
 * A backward call's arguments: `io`'s arrays and the gradients'. Written out rather than spread
 * from `io`: V8's clone of a spread object left each step's objects in its old generation, 2 KiB a
 * step on a model of nine weights, 71 MiB of garbage by 24,000 steps before a full collection.
 */
export function gradIO(
  io: OpIO,
  dy: readonly Float32Array[],
  dx: ReadonlyArray<Float32Array | null>,
  addDx: readonly boolean[],
  paramsDone: () => void,
): GradIO {
  return {
    batch: io.batch,
    x: io.x,
    y: io.y,
    mask: io.mask,
    saved: io.saved,
    temp: io.temp,
    dy,
    dx,
    addDx,
    paramsDone,
  };
}

/**
 * One layer call of a compiled step, on per-sample shapes fixed when it was made. Ops never
 * allocate per step: their arrays come from the step, sized by `saved` and `temps`.
 */
export interface Op {
  /** "name (Class)", for notes and errors. */
  readonly layer: string;
  /** The weights it reads, in the order of the layer's weights. */
  readonly params: readonly ParamSlot[];
  /** Its backward pass never reads its outputs' values (an op after it may then compute over them in place). */
  readonly outputUnused?: boolean;
  /** It computes correctly with its output over its input (x and y one array), its backward reading only y. */
  readonly inPlace?: boolean;
  /** Element counts of the arrays it keeps from forward to backward, for `batch` samples. */
  saved(batch: number): number[];
  /** Element counts of the arrays it uses within one call. */
  temps(batch: number): number[];
  forward(ctx: StepContext, io: OpIO): void;
  backward(ctx: StepContext, io: GradIO): void;
}

export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Whether a slot takes a gradient. */
export function trained(slot: ParamSlot | null | undefined): slot is ParamSlot & { offset: number } {
  return !!slot && slot.offset !== null;
}

/**
 * Writes or adds `compute`'s result into `target`: where it must add, computes into `scratch`
 * first. For kernels that can only write.
 */
export function emit(
  addon: NativeAddon,
  target: Float32Array,
  add: boolean,
  scratch: Float32Array,
  compute: (into: Float32Array) => void,
): void {
  if (!add) return compute(target);
  const tmp = scratch.subarray(0, target.length);
  compute(tmp);
  addon.accumulate(target, tmp, 0);
}
