import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "../backends/native/addon";
import { NativeBackend } from "../backends/native/backend";
import { NativeStep } from "../backends/native/step/native-step";
import { DataError } from "../errors/errors";
import { tensorOf } from "../model/model-io";
import { onDevice, readConcat } from "./device-io";
import type { LoadedReplica } from "./loaded-replica";
import {
  feedList,
  feedRows,
  objectiveLoss,
  outputList,
  reported,
  reportedNames,
  type Feed,
  type Objective,
} from "./objective";
import { inputNonFinite, labelTensor, nonFiniteIn, type NonFinite } from "./step-health";

/**
 * A tensor's values for an immediate copy. On the native backend this reads the backing array
 * without marking it handed-out, so its memory can be recycled for the next step.
 */
export function readValues(t: tf.Tensor): Float32Array {
  const b = tf.backend();
  return b instanceof NativeBackend ? b.values(t) : (t.dataSync() as Float32Array);
}

/** x *= alpha, with the native kernel where it was built (a gradient can hold millions of values). */
export function scaleInPlace(x: Float32Array, alpha: number): void {
  const load = loadAddon();
  if (load.ok) load.addon.scale(x, alpha);
  else for (let i = 0; i < x.length; i++) x[i]! *= alpha;
}

/** dst += src, with the native kernel where it was built. */
export function addInPlace(dst: Float32Array, src: Float32Array): void {
  const load = loadAddon();
  if (load.ok) load.addon.accumulate(dst, src, 0);
  else for (let i = 0; i < dst.length; i++) dst[i]! += src[i]!;
}

/** What a slice's step reads besides its gradient: the buckets to announce, and the state after its forward pass. */
export interface SliceExtras {
  /** Buckets sent during the backward pass: the native step announces each variable once written. */
  ready?: (from: number) => void;
  /** Filled with the model's state (BatchNormalization's statistics) as the forward pass left it. */
  stateNow?: Float32Array;
}

/**
 * Writes weight x grad(mean loss over the slice + regularizers) into `flat`, laid out as the
 * variables in order; returns the slice's mean loss and compiled metrics. On a device (webgpu)
 * the loss, the metrics, every gradient and the state are read back in one read.
 */
export async function sliceGradient(
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  weight: number,
  flat: Float32Array,
  extra: SliceExtras = {},
): Promise<{ loss: number; metrics?: Record<string, number> }> {
  try {
    const native = r.step.native;
    return await r.insight.around(feedRows(x), async () => {
      if (native) return nativeSlice(r, native, x, y, weight, flat, extra);
      return onDevice()
        ? await deviceSlice(r, x, y, weight, flat, extra.stateNow)
        : await autodiffSlice(r, x, y, weight, flat, extra.stateNow);
    });
  } catch (err) {
    const msg = (err as Error).message;
    if (/shape|rank|compatible/i.test(msg)) {
      const shapes = (f: Feed) =>
        feedList(f)
          .map((t) => `[${t.shape.join(", ")}]`)
          .join(" + ");
      throw new DataError(
        `a batch of x ${shapes(x)} and y ${shapes(y)} does not fit the model: ${msg.split("\n")[0]}`,
        {
          hint: "check that the dataset's sample shapes match the model's input and output shapes",
        },
      );
    }
    throw err;
  } finally {
    r.state.moved();
  }
}

function nativeSlice(
  r: LoadedReplica,
  step: NativeStep,
  x: Feed,
  y: Feed,
  weight: number,
  flat: Float32Array,
  extra: SliceExtras,
): { loss: number; metrics?: Record<string, number> } {
  const { loss, outs, each } = step.run(x, y, weight, flat, extra.ready);
  // The forward pass moved the state (BatchNormalization's moving statistics) in place.
  if (extra.stateNow) extra.stateNow.set(r.state.values());
  const metrics = nativeMetrics(r, step, y, outs, each);
  return metrics ? { loss, metrics } : { loss };
}

/** The compiled metrics (and each output's loss, with several) of a native step's outputs for the slice's targets `y`; undefined when there are none. */
export function nativeMetrics(
  r: LoadedReplica,
  step: NativeStep,
  y: Feed,
  outs: readonly Float32Array[],
  each: readonly number[],
): Record<string, number> | undefined {
  const names = reportedNames(r.objective);
  if (names.length === 0) return undefined;
  const targets = feedList(y);
  const batch = targets[0]?.shape[0] ?? 0;
  const ys = targets.map(labelTensor);
  const ts = outs.map((o, k) => tf.tensor(o, [batch, ...step.outShapes[k]!], "float32"));
  const losses = each.map((l) => tf.scalar(l));
  try {
    return readReported(r.objective, ys, ts, losses)!;
  } finally {
    tf.dispose([...ys, ...ts, ...losses]);
  }
}

/**
 * The slice's output (kept), the gradient of each variable by autodiff, and the loss they are the
 * gradient of: the mean over the slice plus the regularizers, which model.fit's History reports too.
 */
function gradientsOf(
  r: LoadedReplica,
  xs: tf.Tensor[],
  ys: tf.Tensor[],
): { outs: tf.Tensor[]; each: tf.Scalar[]; grads: tf.Tensor[]; value: tf.Scalar } {
  let outs: tf.Tensor[] = [];
  let each: tf.Scalar[] = [];
  const { value, grads } = tf.variableGrads(() => {
    outs = outputList(r.model.apply(xs.length === 1 ? xs[0]! : xs, { training: true }) as tf.Tensor | tf.Tensor[]).map(
      (t) => tf.keep(t),
    );
    const loss = objectiveLoss(r.objective, ys, outs);
    each = loss.each.map((l) => tf.keep(l));
    let total = loss.total;
    for (const reg of r.model.calculateLosses()) total = tf.add(total, reg);
    return total;
  }, r.vars);
  const list = r.vars.map((v) => {
    const g = grads[v.name];
    if (!g) throw new DataError(`no gradient for ${v.name}`);
    return g;
  });
  return { outs, each, grads: list, value };
}

/** The reported metrics (and each output's loss) read to the host, by name; undefined when there are none. */
function readReported(
  o: Objective,
  ys: tf.Tensor[],
  outs: tf.Tensor[],
  each: tf.Scalar[],
): Record<string, number> | undefined {
  const names = reportedNames(o);
  if (names.length === 0) return undefined;
  const values = tf.tidy(() => reported(o, ys, outs, each).map((s) => s.dataSync()[0]!));
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

async function autodiffSlice(
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  weight: number,
  flat: Float32Array,
  stateNow?: Float32Array,
): Promise<{ loss: number; metrics?: Record<string, number> }> {
  const xs = feedList(x).map(tensorOf);
  const ys = feedList(y).map(labelTensor);
  let g: ReturnType<typeof gradientsOf> | undefined;
  try {
    g = gradientsOf(r, xs, ys);
    const loss = g.value.dataSync()[0]!;
    let off = 0;
    g.grads.forEach((t, i) => {
      flat.set(readValues(t), off);
      off += r.sizes[i]!;
    });
    if (weight !== 1) scaleInPlace(flat, weight);
    if (stateNow) await readConcat(r.state.tensors(), stateNow);
    const metrics = readReported(r.objective, ys, g.outs, g.each);
    return { loss, ...(metrics ? { metrics } : {}) };
  } finally {
    tf.dispose([...xs, ...ys, ...(g ? [g.value, ...g.outs, ...g.each, ...g.grads] : [])]);
  }
}

/**
 * The same on a device: the loss, the metrics, the weighted gradient and the state concatenated
 * there and read back in one read (each read is a round trip to the GPU).
 */
async function deviceSlice(
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  weight: number,
  flat: Float32Array,
  stateNow?: Float32Array,
): Promise<{ loss: number; metrics?: Record<string, number> }> {
  const xs = feedList(x).map(tensorOf);
  const ys = feedList(y).map(labelTensor);
  let g: ReturnType<typeof gradientsOf> | undefined;
  let parts: tf.Tensor[] = [];
  try {
    g = gradientsOf(r, xs, ys);
    const got = g;
    parts = tf.tidy(() => [
      got.value.reshape([1]),
      ...reported(r.objective, ys, got.outs, got.each).map((m) => m.reshape([1])),
      ...got.grads.map((t) => (weight !== 1 ? tf.mul(t, weight) : t.clone()).reshape([-1])),
    ]);
    const values = await readConcat([...parts, ...(stateNow ? r.state.tensors() : [])]);
    const names = reportedNames(r.objective);
    const m = names.length;
    flat.set(values.subarray(1 + m, 1 + m + flat.length));
    if (stateNow) stateNow.set(values.subarray(1 + m + flat.length));
    const metrics = m > 0 ? Object.fromEntries(names.map((name, i) => [name, values[1 + i]!])) : undefined;
    return { loss: values[0]!, ...(metrics ? { metrics } : {}) };
  } finally {
    tf.dispose([...xs, ...ys, ...parts, ...(g ? [g.value, ...g.outs, ...g.each, ...g.grads] : [])]);
  }
}

/** A slice's gradient as a step can use it, or why it cannot: non-finite (where), or what threw. */
export interface SliceOutcome {
  loss: number;
  metrics?: Record<string, number>;
  nonFinite?: NonFinite;
  failure?: unknown;
}

/**
 * sliceGradient for a step: `grads` holds the weighted gradient, or all zeros when the slice
 * holds or yields NaN or Infinity or its computation threw. A worker still takes part in the
 * step's communication with those zeros, so no peer waits, and says why. With `extra.ready`
 * (buckets sent during the backward pass), parts of `grads` may be in flight: only the loss is
 * checked here, and the buckets check and zero their own parts.
 */
export async function checkedSliceGradient(
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  weight: number,
  grads: Float32Array,
  extra: SliceExtras = {},
): Promise<SliceOutcome> {
  let out: SliceOutcome = { loss: 0 };
  const ready = extra.ready;
  try {
    const input = inputNonFinite(...feedList(x), ...feedList(y));
    if (input) out = { loss: NaN, nonFinite: input };
    else if (feedRows(x) > 0) {
      out = await sliceGradient(r, x, y, weight, grads, extra);
      const found = ready
        ? Number.isFinite(out.loss)
          ? undefined
          : ({ where: "loss" } as const)
        : nonFiniteIn(out.loss, grads, r.names, r.sizes);
      if (found) out.nonFinite = found;
    }
  } catch (err) {
    out = { loss: NaN, failure: err };
  }
  if (!ready && (out.nonFinite || out.failure !== undefined)) grads.fill(0);
  return out;
}

/**
 * A straggler made on purpose: waits (factor - 1) x the compute time just measured, as if the
 * device were `factor` times slower. Returns the time waited.
 */
export async function slowDown(factor: number, computeMs: number): Promise<number> {
  if (factor <= 1) return 0;
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, (factor - 1) * computeMs));
  return performance.now() - t0;
}
