import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { patchWasmKernels } from "../../sdk/backends/wasm/patches";
import { assertClose, randomArray, runOn } from "../helpers/backends";

/**
 * The fallback backend: wasm plus meshtrain's kernels for what it lacks (the convolution filter
 * gradient, depthwise gradients, ...) or does slowly (transposed matmuls, the input gradient).
 * Each patched kernel is checked against the stock cpu kernel.
 */

tf.enableProdMode();
const patched = patchWasmKernels();
let seed = 100;

function compare(what: string, shapes: number[][], f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[], rel = 1e-4): void {
  const data = shapes.map((s) => ({ s, v: randomArray(s.reduce((a, b) => a * b, 1), seed++) }));
  const make = (): tf.Tensor[] => data.map((d) => tf.tensor(d.v, d.s));
  const stock = runOn("cpu", () => f(...make()));
  const wasm = runOn("wasm", () => f(...make()));
  tf.setBackend("cpu");
  wasm.forEach((w, i) => {
    assert.deepEqual(w.shape, stock[i]!.shape, `${what}: output ${i} shape`);
    assertClose(w.values, stock[i]!.values, rel, `${what}: output ${i}`);
  });
}

test("the patches cover what the wasm backend lacks for training", async () => {
  assert.ok(await tf.setBackend("wasm"));
  tf.setBackend("cpu");
  for (const k of ["BatchMatMul", "Conv2DBackpropFilter", "Conv2DBackpropInput", "MaxPoolGrad", "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "UnsortedSegmentSum"]) {
    assert.ok(patched.includes(k), `${k} is patched`);
  }
});

test("transposed matmuls", () => {
  for (const [ta, tb] of [[true, false], [false, true], [true, true]] as const) {
    compare(`matMul ${ta} ${tb}`, [ta ? [7, 3] : [3, 7], tb ? [5, 7] : [7, 5]], (a, b) => tf.matMul(a!, b!, ta, tb));
  }
  compare("fused transposed", [[9, 6], [4, 9], [4]], (a, b, bias) => tf.fused.matMul({ a: a!, b: b!, transposeA: true, transposeB: true, bias, activation: "relu" }));
});

test("convolution gradients through the forward convolution", () => {
  const cases: Array<[number[], number[], number, "same" | "valid"]> = [
    [[2, 9, 8, 3], [3, 3, 3, 4], 1, "valid"],
    [[2, 9, 8, 3], [3, 3, 3, 5], 2, "same"],
    [[1, 10, 11, 2], [4, 2, 2, 3], 3, "same"],
    [[2, 7, 7, 4], [3, 3, 4, 2], 1, "same"],
  ];
  for (const [xs, fs, strides, pad] of cases) {
    compare(`conv grads ${JSON.stringify([xs, fs, strides, pad])}`, [xs, fs], (x, w) =>
      tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(tf.conv2d(a as tf.Tensor4D, b as tf.Tensor4D, strides, pad))))([x!, w!]),
    );
  }
});

test("pooling and depthwise gradients", () => {
  compare("maxPool grad", [[2, 9, 8, 3]], (x) => tf.grad((a: tf.Tensor) => tf.sum(tf.square(tf.maxPool(a as tf.Tensor4D, 3, 2, "same"))))(x!));
  compare("depthwise grads", [[2, 8, 7, 3], [3, 3, 3, 2]], (x, w) =>
    tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.square(tf.depthwiseConv2d(a as tf.Tensor4D, b as tf.Tensor4D, 1, "same"))))([x!, w!]),
  );
});

test("a small CNN trains on patched wasm as it does on stock TF.js", async () => {
  const build = (): tf.LayersModel =>
    tf.sequential({
      layers: [
        tf.layers.conv2d({ inputShape: [10, 10, 1], filters: 4, kernelSize: 3, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }),
        tf.layers.maxPooling2d({ poolSize: 2 }),
        tf.layers.flatten(),
        tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }),
      ],
    });
  const x = randomArray(8 * 100, 1);
  const y = new Float32Array(8 * 3).map((_, i) => (i % 3 === Math.floor(i / 3) % 3 ? 1 : 0));
  const trainOn = async (backend: string): Promise<Float32Array[]> => {
    await tf.setBackend(backend);
    const m = build();
    m.compile({ optimizer: tf.train.sgd(0.5), loss: "categoricalCrossentropy" });
    const xs = tf.tensor4d(x, [8, 10, 10, 1]);
    const ys = tf.tensor2d(y, [8, 3]);
    await m.fit(xs, ys, { epochs: 3, batchSize: 4, shuffle: false, verbose: 0 });
    const w = m.getWeights().map((t) => Float32Array.from(t.dataSync()));
    tf.dispose([xs, ys]);
    m.dispose();
    return w;
  };
  const stock = await trainOn("cpu");
  const wasm = await trainOn("wasm");
  await tf.setBackend("cpu");
  wasm.forEach((w, i) => assertClose(w, stock[i]!, 1e-3, `weight ${i}`));
});
