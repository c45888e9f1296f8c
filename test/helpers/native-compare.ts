import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import type { Heads, LossName } from "../../sdk/protocol/loss-names";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { sliceGradient } from "../../sdk/compute/slice-gradient";
import { loadReplica, type LoadedReplica } from "../../sdk/compute/loaded-replica";
import { randomArray } from "./backends";

/**
 * The native step against TF.js's autodiff on the stock cpu kernels: the same model, weights,
 * slice and Math.random() sequence (Dropout draws from it) give the same loss, gradient and
 * state (BatchNormalization's moving statistics) after the step.
 */

export interface Objective {
  loss: LossName;
  heads?: Heads;
  classWeight?: number[];
}

export interface Outcome {
  loss: number;
  g: Float32Array;
  state: Float32Array;
  metrics?: Record<string, number>;
  r: LoadedReplica;
}

/** Runs `f` with Math.random replaced by a seeded generator, so two runs draw the same numbers. */
export function withRandom<T>(seed: number, f: () => Promise<T>): Promise<T> {
  const original = Math.random;
  let s = seed >>> 0 || 1;
  Math.random = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  return f().finally(() => (Math.random = original));
}

export async function replicaOn(backend: string, model: tf.LayersModel, o: Objective, batch = 64): Promise<LoadedReplica> {
  tf.setBackend(backend);
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = model.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  return loadReplica(
    {
      type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer: { name: "sgd", learningRate: 0.1 }, loss: o.loss, replicaBatch: batch, stepTimeoutMs: 60_000, attachments: [],
      ...(o.heads ? { heads: o.heads } : {}),
      ...(o.classWeight ? { classWeight: o.classWeight } : {}),
    },
    weights,
    null,
  );
}

/** One slice's gradient of `model` on `backend`, weighted by `weight`, drawing randomness from `seed`. */
export async function sliceOn(backend: string, model: tf.LayersModel, o: Objective, x: Tensorlike[], y: Tensorlike[], weight: number, seed: number): Promise<Outcome> {
  const r = await replicaOn(backend, model, o, x[0]!.shape[0]);
  const g = new Float32Array(r.gradientLength);
  const stateNow = new Float32Array(r.state.length);
  const out = await withRandom(seed, () => sliceGradient(r, x.length === 1 ? x[0]! : x, y.length === 1 ? y[0]! : y, weight, g, stateNow.length > 0 ? { stateNow } : {}));
  return { loss: out.loss, g, state: stateNow, ...(out.metrics ? { metrics: out.metrics } : {}), r };
}

/** Every value within `rel` of its variable's largest in the reference (plus a floor), the loss within rel relative. */
export function assertSame(native: Outcome, ref: Outcome, what: string, rel = 2e-4): void {
  assert.ok(Math.abs(native.loss - ref.loss) <= rel * Math.max(1, Math.abs(ref.loss)), `${what}: loss ${native.loss}, autodiff ${ref.loss}`);
  const close = (a: Float32Array, b: Float32Array, kind: string): void => {
    assert.equal(a.length, b.length, `${what}: ${kind} lengths`);
    const scale = b.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    for (let i = 0; i < b.length; i++) {
      if (!(Math.abs(a[i]! - b[i]!) <= rel * scale + 1e-7)) assert.fail(`${what}: ${kind}[${i}] is ${a[i]}, autodiff ${b[i]} (largest ${scale})`);
    }
  };
  // Each variable against its own largest value: a small layer's gradient is held as tightly as a large one's.
  let at = 0;
  ref.r.sizes.forEach((n, i) => {
    close(native.g.subarray(at, at + n), ref.g.subarray(at, at + n), `gradient of ${ref.r.names[i]}`);
    at += n;
  });
  close(native.state, ref.state, "state");
  for (const [k, v] of Object.entries(ref.metrics ?? {})) {
    const n = native.metrics?.[k];
    assert.ok(n !== undefined && Math.abs(n - v) <= rel * Math.max(1, Math.abs(v)), `${what}: metric ${k} is ${n}, autodiff ${v}`);
  }
}

/**
 * Compares the native step with autodiff on one model and slice; asserts the model compiled to
 * the native step (or, with `expectFallback`, that it did not, naming why).
 */
export async function compareNative(model: tf.LayersModel, o: Objective, x: Tensorlike[], y: Tensorlike[], what: string, opts: { weight?: number; seed?: number; rel?: number } = {}): Promise<{ native: Outcome; ref: Outcome }> {
  const weight = opts.weight ?? 1;
  const seed = opts.seed ?? 7;
  const ref = await sliceOn("cpu", model, o, x, y, weight, seed);
  const native = await sliceOn(NATIVE_BACKEND, model, o, x, y, weight, seed);
  try {
    assert.equal(ref.r.step.native, null);
    assert.ok(native.r.step.native, `${what}: the model did not compile: ${native.r.step.why ?? ""}`);
    assertSame(native, ref, what, opts.rel);
  } finally {
    tf.setBackend("cpu");
    ref.r.model.dispose();
    native.r.model.dispose();
  }
  return { native, ref };
}

/** A float tensor of random values in [lo, hi). */
export function floats(shape: number[], seed: number, lo = -1, hi = 1): Tensorlike {
  return { data: randomArray(shape.reduce((a, b) => a * b, 1), seed, lo, hi), shape };
}

/** Integer ids in [lo, hi) as floats (how datasets hand them over). */
export function ids(shape: number[], seed: number, hi: number, lo = 0): Tensorlike {
  return { data: Float32Array.from(randomArray(shape.reduce((a, b) => a * b, 1), seed, lo, hi), Math.floor), shape };
}

/** Targets for a loss over outputs of shape [batch, ...out]: one-hot rows, class ids, or values in [0, 1). */
export function targets(loss: LossName, shape: number[], seed: number): Tensorlike {
  const cols = shape[shape.length - 1]!;
  const rows = shape.reduce((a, b) => a * b, 1) / cols;
  const labels = Float32Array.from(randomArray(rows, seed, 0, cols), Math.floor);
  if (loss === "sparseCategoricalCrossentropy") return { data: labels, shape: [...shape.slice(0, -1), 1] };
  if (loss === "categoricalCrossentropy" || loss === "categoricalHinge" || loss === "kullbackLeiblerDivergence") {
    const y = new Float32Array(rows * cols);
    labels.forEach((c, i) => (y[i * cols + c] = 1));
    return { data: y, shape };
  }
  if (loss === "hinge" || loss === "squaredHinge") return { data: Float32Array.from(randomArray(rows * cols, seed), (v) => (v > 0 ? 1 : -1)), shape };
  if (loss === "binaryCrossentropy") return { data: Float32Array.from(randomArray(rows * cols, seed, 0, 1), Math.round), shape };
  return { data: randomArray(rows * cols, seed, 0, 1), shape };
}
