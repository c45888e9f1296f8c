import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { assertClose, nativeAvailable, randomArray, runOn } from "../helpers/backends";

/**
 * Every native kernel against TF.js's stock cpu kernel on random inputs: forward values and
 * gradients, odd shapes, broadcasting, strides, padding modes.
 */

tf.enableProdMode();
nativeAvailable();

let seed = 1;
const t = (shape: number[], lo = -1, hi = 1): tf.Tensor => tf.tensor(randomArray(shape.reduce((a, b) => a * b, 1), seed++, lo, hi), shape);

/** Builds inputs once (as host arrays) and runs `f` on both backends with identical data. */
function compare(what: string, shapes: number[][], f: (...xs: tf.Tensor[]) => tf.Tensor | tf.Tensor[], rel = 1e-5, range: [number, number] = [-1, 1]): void {
  const data = shapes.map((s) => ({ s, v: randomArray(s.reduce((a, b) => a * b, 1), seed++, range[0], range[1]) }));
  const make = (): tf.Tensor[] => data.map((d) => tf.tensor(d.v, d.s));
  const stock = runOn("cpu", () => f(...make()));
  const native = runOn(NATIVE_BACKEND, () => f(...make()));
  tf.setBackend("cpu");
  assert.equal(native.length, stock.length, what);
  native.forEach((n, i) => {
    assert.deepEqual(n.shape, stock[i]!.shape, `${what}: output ${i} shape`);
    assertClose(n.values, stock[i]!.values, rel, `${what}: output ${i}`);
  });
}

/** f's value and its gradients with respect to every input. */
function withGrads(f: (...xs: tf.Tensor[]) => tf.Tensor): (...xs: tf.Tensor[]) => tf.Tensor[] {
  return (...xs) => {
    // A non-uniform upstream gradient, so a wrong index in a backward kernel cannot hide.
    const weighted = (...ys: tf.Tensor[]): tf.Tensor => {
      const y = f(...ys);
      const w = tf.tensor(Float32Array.from({ length: y.size }, (_, i) => 0.5 + i / Math.max(1, y.size)), y.shape);
      return tf.sum(tf.mul(y, w));
    };
    return [f(...xs), ...tf.grads(weighted)(xs)];
  };
}

describe("matmul", () => {
  for (const [ta, tb] of [[false, false], [true, false], [false, true], [true, true]] as const) {
    test(`transposeA=${ta} transposeB=${tb}, with gradients`, () => {
      compare(`matMul ${ta} ${tb}`, [ta ? [7, 3] : [3, 7], tb ? [5, 7] : [7, 5]], withGrads((a, b) => tf.matMul(a!, b!, ta, tb)));
    });
  }
  test("batched, broadcast batch, rank 3 x rank 2", () => {
    compare("batched", [[2, 3, 5], [2, 5, 4]], withGrads((a, b) => tf.matMul(a!, b!)));
    compare("broadcast a", [[1, 3, 5], [4, 5, 2]], (a, b) => tf.matMul(a!, b!));
    compare("broadcast b", [[4, 3, 5], [5, 2]], (a, b) => tf.matMul(a!, b!));
    compare("empty", [[0, 5], [5, 3]], (a, b) => tf.matMul(a!, b!));
  });
  for (const activation of ["linear", "relu", "relu6", "elu", "sigmoid", "leakyrelu"] as const) {
    test(`fused matMul with bias and ${activation}`, () => {
      compare(`fused ${activation}`, [[6, 9], [9, 4], [4]], (a, b, bias) => tf.fused.matMul({ a: a!, b: b!, bias, activation, leakyreluAlpha: 0.3 }));
      compare(`fused ${activation} transposed`, [[9, 6], [4, 9]], (a, b) => tf.fused.matMul({ a: a!, b: b!, transposeA: true, transposeB: true, activation }));
    });
  }
});

describe("elementwise", () => {
  const pairs = [[[3, 4], [3, 4]], [[3, 4], [4]], [[3, 1], [1, 4]], [[2, 3, 4], [3, 1]], [[5], []], [[], [2, 2]], [[1, 1, 5], [2, 3, 1]], [[2, 1, 3, 1, 2], [1, 4, 1, 5, 1]], [[0, 3], [3]]];
  const ops: Record<string, (a: tf.Tensor, b: tf.Tensor) => tf.Tensor> = {
    add: tf.add, sub: tf.sub, mul: tf.mul, div: tf.div, maximum: tf.maximum, minimum: tf.minimum, squaredDifference: tf.squaredDifference,
  };
  for (const [name, op] of Object.entries(ops)) {
    test(`${name} with broadcasting, and its gradient`, () => {
      // TF.js's own gradients of maximum, minimum and squaredDifference do not reduce over
      // broadcast axes, so for those the gradient is compared on equal shapes only.
      const broadcastGrads = ["add", "sub", "mul", "div"].includes(name);
      for (const [sa, sb] of pairs) {
        const f = (a?: tf.Tensor, b?: tf.Tensor): tf.Tensor => op(a!, b!);
        const grads = broadcastGrads || JSON.stringify(sa) === JSON.stringify(sb);
        compare(`${name} ${JSON.stringify([sa, sb])}`, [sa!, sb!], grads ? withGrads(f) : f, 1e-5, name === "div" ? [0.5, 2] : [-1, 1]);
      }
    });
  }
  test("pow on positive bases", () => compare("pow", [[4, 5], [5]], (a, b) => tf.pow(a!, b!), 1e-5, [0.1, 3]));
  const unary: Record<string, [(x: tf.Tensor) => tf.Tensor, [number, number]]> = {
    relu: [tf.relu, [-1, 1]], relu6: [tf.relu6, [-8, 8]], step: [(x) => tf.step(x, 0.3), [-1, 1]], exp: [tf.exp, [-3, 3]], log: [tf.log, [0.01, 5]],
    neg: [tf.neg, [-1, 1]], sqrt: [tf.sqrt, [0, 4]], rsqrt: [tf.rsqrt, [0.1, 4]], square: [tf.square, [-3, 3]], sigmoid: [tf.sigmoid, [-6, 6]],
    tanh: [tf.tanh, [-3, 3]], abs: [tf.abs, [-2, 2]], reciprocal: [tf.reciprocal, [0.2, 3]], clip: [(x) => tf.clipByValue(x, -0.3, 0.4), [-1, 1]],
    elu: [tf.elu, [-2, 2]], leakyRelu: [(x) => tf.leakyRelu(x, 0.15), [-2, 2]], softplus: [tf.softplus, [-20, 20]], log1p: [tf.log1p, [-0.5, 3]],
    expm1: [tf.expm1, [-2, 2]], sign: [tf.sign, [-1, 1]],
  };
  for (const [name, [op, range]] of Object.entries(unary)) {
    test(`${name}, and its gradient`, () => compare(name, [[3, 7, 5]], withGrads((x) => op(x!)), 2e-5, range));
  }
  test("addN", () => compare("addN", [[4, 6], [4, 6], [4, 6]], (a, b, c) => tf.addN([a!, b!, c!])));
  test("int32 inputs fall back to the stock kernels", () => {
    const stock = runOn("cpu", () => tf.add(tf.tensor([1, 2, 3], [3], "int32"), tf.scalar(4, "int32")));
    const native = runOn(NATIVE_BACKEND, () => tf.add(tf.tensor([1, 2, 3], [3], "int32"), tf.scalar(4, "int32")));
    tf.setBackend("cpu");
    assert.deepEqual(Array.from(native[0]!.values), Array.from(stock[0]!.values));
  });
});

describe("reductions and softmax", () => {
  const cases: Array<[number[], number | number[] | undefined, boolean]> = [
    [[4, 5, 6], 0, false], [[4, 5, 6], 2, true], [[4, 5, 6], [0, 1], false], [[4, 5, 6], [1, 2], true], [[4, 5, 6], [0, 2], false], [[4, 5, 6], undefined, false], [[7], 0, false],
  ];
  for (const [name, op] of Object.entries({ sum: tf.sum, mean: tf.mean, max: tf.max, min: tf.min })) {
    test(`${name} over leading, trailing, middle, split and all axes`, () => {
      for (const [shape, axis, keep] of cases) compare(`${name} ${JSON.stringify([shape, axis, keep])}`, [shape], withGrads((x) => op(x!, axis, keep)));
    });
  }
  test("softmax over the last axis, and its gradient", () => {
    compare("softmax", [[5, 11]], withGrads((x) => tf.softmax(x!)), 1e-5, [-5, 5]);
    compare("softmax 3d", [[2, 3, 4]], (x) => tf.softmax(x!));
    compare("logSoftmax", [[5, 11]], withGrads((x) => tf.logSoftmax(x!)), 1e-5, [-5, 5]);
  });
});

describe("gather and its gradient (embeddings)", () => {
  // Ids with repeats, so the gradient adds several rows into one; float ids as the layers feed them (cast inside).
  const ids = Float32Array.from([3, 0, 7, 3, 3, 9, 1, 0, 12, 7, 3, 5], (v) => v);
  test("an Embedding's lookup and gradient equal the stock kernels, exactly", () => {
    compare("gather rows", [[13, 5]], withGrads((x) => tf.gather(x!, tf.tensor(ids, [3, 4], "int32"))), 0);
    compare("gather of a 3-d table", [[13, 2, 3]], withGrads((x) => tf.gather(x!, tf.tensor(ids, [12], "int32"))), 0);
    compare("unsortedSegmentSum", [[12, 4]], (x) => tf.unsortedSegmentSum(x!, tf.tensor(ids, [12], "int32"), 14), 0);
    // Another axis, and an id out of range, go to the stock kernel (which refuses the id with its message).
    compare("gather on axis 1", [[4, 13]], (x) => tf.gather(x!, tf.tensor(ids, [12], "int32"), 1), 0);
    const bad = (): unknown => runOn(NATIVE_BACKEND, () => tf.gather(tf.zeros([4, 2]), tf.tensor([1, -1], [2], "int32")));
    assert.throws(bad, /GatherV2: the index value -1 is not in \[0, 3\]/);
    tf.setBackend("cpu");
  });
});

describe("convolutions", () => {
  const convCases: Array<[string, number[], number[], number | [number, number], "same" | "valid" | number, number | [number, number]]> = [
    ["3x3 valid", [2, 9, 8, 3], [3, 3, 3, 4], 1, "valid", 1],
    ["3x3 same stride 2", [2, 9, 8, 3], [3, 3, 3, 5], 2, "same", 1],
    ["5x3 valid strides 2,1", [1, 11, 9, 2], [5, 3, 2, 3], [2, 1], "valid", 1],
    ["explicit pad 1", [2, 6, 7, 4], [3, 3, 4, 2], 1, 1, 1],
    ["1x1 pointwise", [3, 5, 5, 6], [1, 1, 6, 7], 1, "valid", 1],
    ["dilated 2", [1, 10, 10, 2], [3, 3, 2, 3], 1, "same", 2],
    ["even kernel same stride 3", [2, 10, 11, 3], [4, 2, 3, 2], 3, "same", 1],
    // Multiples of 16 output channels take the direct kernels (conv_direct.c): edge columns, blocks
    // of pixels and remainders of 4, 2, 1, strides, a 1x1 projection, dilation, an even kernel,
    // the input's gradient as the turned filter's forward pass (unit stride, rows of 8 or more),
    // groups of 64 output channels and a remainder of 16 or 48, passes of 128 input channels, the
    // filter's gradient over a remainder of 3 input channels. Rows under 8 take the GEMM forward.
    ["direct 16 -> 32 same stride 2", [2, 9, 7, 16], [3, 3, 16, 32], 2, "same", 1],
    ["direct 3 -> 16 same (forward and filter only)", [2, 8, 9, 3], [3, 3, 3, 16], 1, "same", 1],
    ["direct 1x1 projection stride 2", [2, 8, 8, 16], [1, 1, 16, 32], 2, "valid", 1],
    ["direct 32 -> 16 dilated", [1, 10, 9, 32], [3, 3, 32, 16], 1, "valid", 2],
    ["direct 32 -> 32 even kernel", [1, 7, 6, 32], [2, 3, 32, 32], 1, "same", 1],
    ["direct 16 -> 16 explicit pad 2 on 19 columns", [2, 5, 19, 16], [3, 3, 16, 16], 1, 2, 1],
    ["direct 64 -> 80 same on 10 columns", [1, 5, 10, 64], [3, 3, 64, 80], 1, "same", 1],
    ["direct 144 -> 48 on 9 columns", [1, 4, 9, 144], [3, 3, 144, 48], 1, "same", 1],
    ["direct 7 -> 16 on 9 columns", [2, 6, 9, 7], [3, 3, 7, 16], 1, "same", 1],
    ["direct 16 -> 32 stride 2 on 17 columns", [1, 5, 17, 16], [3, 3, 16, 32], 2, "same", 1],
  ];
  for (const [name, xs, fs, strides, pad, dilations] of convCases) {
    test(`conv2d ${name}, and both gradients`, () => {
      const f = (x: tf.Tensor, w: tf.Tensor): tf.Tensor => tf.conv2d(x as tf.Tensor4D, w as tf.Tensor4D, strides, pad, "NHWC", dilations);
      compare(`conv2d ${name}`, [xs, fs], (x, w) => f(x!, w!), 1e-4);
      if (dilations === 1) compare(`conv2d grads ${name}`, [xs, fs], withGrads((x, w) => f(x!, w!)), 1e-4);
    });
  }
  test("fused conv2d with bias and relu", () => {
    compare("fused conv", [[2, 7, 7, 3], [3, 3, 3, 4], [4]], (x, w, b) => tf.fused.conv2d({ x: x as tf.Tensor4D, filter: w as tf.Tensor4D, strides: 1, pad: "same", bias: b, activation: "relu" }), 1e-4);
  });
  for (const [mult, strides, pad] of [[1, 1, "same"], [2, 2, "valid"], [3, 1, "valid"]] as const) {
    test(`depthwise conv multiplier ${mult} stride ${strides} ${pad}, and gradients`, () => {
      compare(`depthwise ${mult}`, [[2, 8, 7, 3], [3, 3, 3, mult]], withGrads((x, w) => tf.depthwiseConv2d(x as tf.Tensor4D, w as tf.Tensor4D, strides, pad)), 1e-4);
    });
  }
  test("separable conv and gradients", () => {
    compare("separable", [[2, 8, 8, 3], [3, 3, 3, 2], [1, 1, 6, 4]], withGrads((x, d, p) => tf.separableConv2d(x as tf.Tensor4D, d as tf.Tensor4D, p as tf.Tensor4D, 1, "same")), 1e-4);
  });
});

describe("pooling", () => {
  for (const [size, strides, pad] of [[2, 2, "valid"], [3, 2, "same"], [3, 1, "same"], [2, 3, "valid"]] as const) {
    test(`max and average pooling ${size}/${strides} ${pad}, and gradients`, () => {
      compare(`maxPool ${size} ${strides} ${pad}`, [[2, 9, 8, 3]], withGrads((x) => tf.maxPool(x as tf.Tensor4D, size, strides, pad)));
      compare(`avgPool ${size} ${strides} ${pad}`, [[2, 9, 8, 3]], withGrads((x) => tf.avgPool(x as tf.Tensor4D, size, strides, pad)));
    });
  }
  test("max pooling sends the gradient to the first of tied maxima", () => {
    const x = tf.tensor4d([1, 1, 1, 1, 0, 2, 2, 0, 3, 3, 3, 3, 1, 1, 1, 1], [1, 4, 4, 1]);
    const f = (): tf.Tensor => tf.grad((y: tf.Tensor) => tf.sum(tf.maxPool(y as tf.Tensor4D, 2, 2, "valid")))(x);
    const stock = runOn("cpu", f);
    const native = runOn(NATIVE_BACKEND, f);
    tf.setBackend("cpu");
    assert.deepEqual(Array.from(native[0]!.values), Array.from(stock[0]!.values));
  });
});

describe("memory reuse never changes what user code can read", () => {
  test("an array handed out by dataSync is not recycled", () => {
    tf.setBackend(NATIVE_BACKEND);
    const a = t([128, 64]);
    const out = tf.add(a, a);
    const seen = out.dataSync();
    const copy = Float32Array.from(seen);
    out.dispose();
    for (let i = 0; i < 20; i++) tf.tidy(() => tf.mul(a, tf.scalar(i)));
    assert.deepEqual(seen, copy);
    a.dispose();
    tf.setBackend("cpu");
  });
  test("a slice sharing a pooled array keeps its values after the original is disposed", () => {
    tf.setBackend(NATIVE_BACKEND);
    const a = t([256, 64]);
    const big = tf.mul(a, tf.scalar(2));
    const part = tf.slice(big, [10, 0], [5, 64]);
    const expected = Float32Array.from(part.dataSync());
    big.dispose();
    for (let i = 0; i < 20; i++) tf.tidy(() => tf.add(a, tf.scalar(i)));
    assert.deepEqual(part.dataSync(), expected);
    tf.dispose([a, part]);
    tf.setBackend("cpu");
  });
});

describe("shapes and the unary ops autodiff leaned on", () => {
  test("transpose of ranks 2 to 6, every kind of permutation, with gradients", () => {
    compare("transpose 2", [[5, 7]], withGrads((x) => tf.transpose(x!)), 0);
    compare("transpose 3", [[4, 5, 6]], withGrads((x) => tf.transpose(x!, [1, 0, 2])), 0);
    compare("transpose 4", [[2, 3, 4, 5]], withGrads((x) => tf.transpose(x!, [0, 2, 1, 3])), 0);
    compare("transpose 4 last", [[2, 3, 4, 5]], (x) => tf.transpose(x!, [3, 2, 1, 0]), 0);
    compare("transpose 6", [[2, 1, 3, 2, 2, 3]], (x) => tf.transpose(x!, [5, 0, 3, 1, 4, 2]), 0);
    compare("transpose empty", [[0, 3]], (x) => tf.transpose(x!), 0);
  });
  test("tile along every axis, ranks 1 to 4", () => {
    compare("tile 1", [[5]], (x) => tf.tile(x!, [3]), 0);
    compare("tile 2", [[2, 3]], (x) => tf.tile(x!, [4, 2]), 0);
    compare("tile 3 inner", [[1, 1, 7]], (x) => tf.tile(x!, [3, 5, 1]), 0);
    compare("tile 4", [[2, 1, 3, 2]], (x) => tf.tile(x!, [2, 3, 1, 2]), 0);
  });
  test("split along the first, a middle and the last axis", () => {
    compare("split last", [[6, 12]], (x) => tf.split(x!, 4, 1), 0);
    compare("split sizes", [[5, 7, 3]], (x) => tf.split(x!, [2, 4, 1], 1), 0);
    compare("split first", [[6, 2, 3]], (x) => tf.split(x!, 3, 0), 0);
  });
  test("erf and floor", () => {
    compare("erf", [[7, 9]], (x) => tf.erf(x!), 2e-6, [-3, 3]);
    compare("floor", [[7, 9]], (x) => tf.floor(x!), 0, [-3, 3]);
  });
});

