import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { registerGradients } from "../../sdk/backends/gradients";
import { randomArray } from "../helpers/backends";

/**
 * The gradients meshtrain registers in place of TF.js's (sdk/backends/gradients.ts) against a
 * reference written out in plain loops, and what they save: the kernels a step dispatches.
 */

tf.enableProdMode();
tf.setBackend("cpu");

/** d sum(w * tile(x, reps)) / dx by hand: each x element collects w over all of its copies. */
function tileGradReference(shape: number[], reps: number[], w: Float32Array): Float32Array {
  const out = new Float32Array(shape.reduce((a, b) => a * b, 1));
  const oshape = shape.map((d, i) => d * reps[i]!);
  const total = oshape.reduce((a, b) => a * b, 1);
  for (let o = 0; o < total; o++) {
    let rest = o;
    let src = 0;
    let stride = 1;
    const coords: number[] = [];
    for (let d = oshape.length - 1; d >= 0; d--) {
      coords[d] = rest % oshape[d]!;
      rest = Math.floor(rest / oshape[d]!);
    }
    for (let d = shape.length - 1; d >= 0; d--) {
      src += (coords[d]! % shape[d]!) * stride;
      stride *= shape[d]!;
    }
    out[src]! += w[o]!;
  }
  return out;
}

test("Tile's gradient equals the sum over tiles, for ranks 1 to 4 and tiles along any axes", () => {
  registerGradients();
  const cases: Array<[number[], number[]]> = [[[5], [3]], [[2, 3], [4, 2]], [[1, 1, 7], [3, 5, 1]], [[2, 1, 3, 2], [2, 3, 1, 2]], [[3, 4], [1, 1]]];
  cases.forEach(([shape, reps], k) => {
    const x = tf.tensor(randomArray(shape.reduce((a, b) => a * b, 1), 10 + k), shape);
    const size = shape.reduce((a, b) => a * b, 1) * reps.reduce((a, b) => a * b, 1);
    const wv = randomArray(size, 20 + k);
    const w = tf.tensor(wv, shape.map((d, i) => d * reps[i]!));
    const g = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.tile(v, reps), w)))(x).dataSync();
    const want = tileGradReference(shape, reps, wv);
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(g[i]! - want[i]!) <= 1e-5 * Math.max(1, Math.abs(want[i]!)), `[${shape}] x [${reps}]: element ${i} is ${g[i]}, expected ${want[i]}`);
    tf.dispose([x, w]);
  });
});

test("a LayerNormalization's backward pass dispatches tens of kernels, not one slice and one add per row", async () => {
  registerGradients();
  const ln = tf.layers.layerNormalization({ inputShape: [64, 16] });
  const x = tf.randomNormal([8, 64, 16]);
  ln.apply(x);
  const vars = ln.trainableWeights.map((v) => v.read() as tf.Variable);
  const p = await tf.profile(() => {
    const { grads, value } = tf.variableGrads(() => tf.sum(ln.apply(x, { training: true }) as tf.Tensor) as tf.Scalar, vars);
    tf.dispose([value, ...Object.values(grads)]);
  });
  // TF.js's own Tile gradient: one Slice and one Add for each of the 8 x 64 tiles of gamma and beta (2,000+).
  assert.ok(p.kernels.length < 100, `${p.kernels.length} kernels`);
  tf.dispose([x]);
});
