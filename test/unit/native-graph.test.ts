import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { nativeAvailable } from "../helpers/backends";
import { compareNative, floats, ids, targets } from "../helpers/native-compare";
import { layers as mt } from "../../sdk/model/layers/index";

/**
 * The native step for whole graphs against TF.js's autodiff, on the models people train: each
 * case a small model of the kind, its gradient, loss and BatchNormalization statistics equal to
 * autodiff's within float32 rounding (Dropout's masks drawn from the same Math.random()).
 */

tf.enableProdMode();
nativeAvailable();

const L = tf.layers;
const init = (seed: number) => ({ kernelInitializer: tf.initializers.glorotUniform({ seed }), biasInitializer: tf.initializers.randomNormal({ seed: seed + 1, stddev: 0.1 }) });

describe("the native step for whole graphs equals autodiff", () => {
  test("an MLP with Dropout and L2 (a regularizer), every activation", async () => {
    for (const act of ["relu", "elu", "selu", "gelu", "swish", "mish", "softplus", "softsign", "hardSigmoid", "relu6", "tanh", "sigmoid"] as const) {
      const m = tf.sequential({
        layers: [
          L.dense({ units: 13, inputShape: [7], activation: act, kernelRegularizer: tf.regularizers.l2({ l2: 0.01 }), ...init(1) }),
          L.dropout({ rate: 0.25 }),
          L.dense({ units: 9, activation: act, biasRegularizer: tf.regularizers.l1({ l1: 0.02 }), ...init(3) }),
          L.dense({ units: 5, activation: "softmax", ...init(5) }),
        ],
      });
      await compareNative(m, { loss: "categoricalCrossentropy" }, [floats([11, 7], 2)], [targets("categoricalCrossentropy", [11, 5], 3)], `MLP ${act}`, { weight: 0.5 });
      m.dispose();
    }
  });

  test("every loss model.compile names", async () => {
    const losses = ["meanSquaredError", "meanAbsoluteError", "meanAbsolutePercentageError", "meanSquaredLogarithmicError", "squaredHinge", "hinge", "categoricalHinge", "logcosh", "categoricalCrossentropy", "sparseCategoricalCrossentropy", "binaryCrossentropy", "kullbackLeiblerDivergence", "poisson", "cosineProximity"] as const;
    for (const loss of losses) {
      const probs = loss.includes("Crossentropy") || loss === "kullbackLeiblerDivergence" || loss === "poisson" || loss === "meanSquaredLogarithmicError";
      const act = loss === "binaryCrossentropy" ? "sigmoid" : probs ? "softmax" : "linear";
      const m = tf.sequential({ layers: [L.dense({ units: 8, inputShape: [6], activation: "tanh", ...init(11) }), L.dense({ units: 4, activation: act, ...init(13) })] });
      await compareNative(m, { loss }, [floats([10, 6], 4)], [targets(loss, [10, 4], 5)], `loss ${loss}`);
      m.dispose();
    }
  });

  test("a residual CNN with BatchNormalization, a projection shortcut, separable and depthwise convolutions", async () => {
    const x = tf.input({ shape: [8, 8, 3] });
    const c1 = L.conv2d({ filters: 4, kernelSize: 3, padding: "same", useBias: false, ...init(21) }).apply(x) as tf.SymbolicTensor;
    const b1 = L.batchNormalization().apply(c1) as tf.SymbolicTensor;
    const r1 = L.activation({ activation: "relu" }).apply(b1) as tf.SymbolicTensor;
    const c2 = L.conv2d({ filters: 6, kernelSize: 3, strides: 2, padding: "same", useBias: false, ...init(23) }).apply(r1) as tf.SymbolicTensor;
    const b2 = L.batchNormalization({ momentum: 0.9 }).apply(c2) as tf.SymbolicTensor;
    const proj = L.conv2d({ filters: 6, kernelSize: 1, strides: 2, ...init(25) }).apply(x) as tf.SymbolicTensor;
    const sum = L.add().apply([b2, proj]) as tf.SymbolicTensor;
    const r2 = L.reLU().apply(sum) as tf.SymbolicTensor;
    const sep = L.separableConv2d({ filters: 5, kernelSize: 3, padding: "same", depthMultiplier: 1, activation: "relu", depthwiseInitializer: tf.initializers.glorotUniform({ seed: 28 }), pointwiseInitializer: tf.initializers.glorotUniform({ seed: 29 }) }).apply(r2) as tf.SymbolicTensor;
    const dw = L.depthwiseConv2d({ kernelSize: 2, strides: 1, depthMultiplier: 1, depthwiseInitializer: tf.initializers.glorotUniform({ seed: 30 }) }).apply(sep) as tf.SymbolicTensor;
    const gap = L.globalAveragePooling2d({}).apply(dw) as tf.SymbolicTensor;
    const out = L.dense({ units: 3, activation: "softmax", ...init(27) }).apply(gap) as tf.SymbolicTensor;
    const m = tf.model({ inputs: x, outputs: out });
    await compareNative(m, { loss: "sparseCategoricalCrossentropy" }, [floats([5, 8, 8, 3], 6)], [targets("sparseCategoricalCrossentropy", [5, 3], 7)], "residual CNN");
    m.dispose();
  });

  test("an embedding, LSTM and GRU with masks, dropout and binary cross-entropy", async () => {
    for (const kind of ["lstm", "gru", "simpleRNN"] as const) {
      for (const variant of [{}, { returnSequences: true }, { goBackwards: true }, { dropout: 0.2, recurrentDropout: 0.3 }, { recurrentActivation: "sigmoid" }] as const) {
        const rnn = (o: Record<string, unknown>) => (kind === "lstm" ? L.lstm(o as never) : kind === "gru" ? L.gru(o as never) : L.simpleRNN(o as never));
        const seq = "returnSequences" in variant;
        const m = tf.sequential({
          layers: [
            L.embedding({ inputDim: 20, outputDim: 6, inputLength: 7, maskZero: true, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 31 }) }),
            rnn({ units: 5, ...(kind === "simpleRNN" ? {} : {}), kernelInitializer: tf.initializers.glorotUniform({ seed: 33 }), recurrentInitializer: tf.initializers.glorotUniform({ seed: 34 }), biasInitializer: tf.initializers.randomNormal({ seed: 35, stddev: 0.1 }), ...variant }),
            ...(seq ? [L.globalAveragePooling1d({})] : []),
            L.dense({ units: 1, activation: "sigmoid", ...init(37) }),
          ],
        });
        // Padded with 0 at the end of some rows, as a tokenizer pads.
        const x = ids([6, 7], 8, 20, 1);
        for (let r = 0; r < 6; r++) for (let t = 7 - r; t < 7; t++) x.data[r * 7 + t] = 0;
        await compareNative(m, { loss: "binaryCrossentropy" }, [x], [targets("binaryCrossentropy", [6, 1], 9)], `${kind} ${JSON.stringify(variant)}`);
        m.dispose();
      }
    }
  });

  test("a pre-norm transformer block from stock layers: LayerNormalization, Dot attention, softmax, residual adds", async () => {
    const T = 6;
    const d = 8;
    const x = tf.input({ shape: [T, d] });
    const n1 = L.layerNormalization().apply(x) as tf.SymbolicTensor;
    const q = L.dense({ units: d, ...init(41) }).apply(n1) as tf.SymbolicTensor;
    const k = L.dense({ units: d, ...init(43) }).apply(n1) as tf.SymbolicTensor;
    const v = L.dense({ units: d, ...init(45) }).apply(n1) as tf.SymbolicTensor;
    const scores = L.dot({ axes: [2, 2] }).apply([q, k]) as tf.SymbolicTensor;
    const att = L.softmax({ axis: -1 }).apply(scores) as tf.SymbolicTensor;
    const ctx = L.dot({ axes: [2, 1] }).apply([att, v]) as tf.SymbolicTensor;
    const r1 = L.add().apply([x, ctx]) as tf.SymbolicTensor;
    const n2 = L.layerNormalization().apply(r1) as tf.SymbolicTensor;
    const h = L.dense({ units: 16, activation: "gelu", ...init(47) }).apply(n2) as tf.SymbolicTensor;
    const h2 = L.dense({ units: d, ...init(49) }).apply(h) as tf.SymbolicTensor;
    const r2 = L.add().apply([r1, h2]) as tf.SymbolicTensor;
    const pooled = L.globalAveragePooling1d({}).apply(r2) as tf.SymbolicTensor;
    const out = L.dense({ units: 4, activation: "softmax", ...init(51) }).apply(pooled) as tf.SymbolicTensor;
    const m = tf.model({ inputs: x, outputs: out });
    await compareNative(m, { loss: "categoricalCrossentropy" }, [floats([3, T, d], 10)], [targets("categoricalCrossentropy", [3, 4], 11)], "transformer block");
    m.dispose();
  });

  test("two inputs, two outputs with loss weights; Concatenate, Multiply, Average, Maximum", async () => {
    const a = tf.input({ shape: [5] });
    const b = tf.input({ shape: [5] });
    const ha = L.dense({ units: 6, activation: "relu", ...init(61) }).apply(a) as tf.SymbolicTensor;
    const hb = L.dense({ units: 6, activation: "tanh", ...init(63) }).apply(b) as tf.SymbolicTensor;
    const cat = L.concatenate().apply([ha, hb]) as tf.SymbolicTensor;
    const mul = L.multiply().apply([ha, hb]) as tf.SymbolicTensor;
    const avg = L.average().apply([ha, hb, mul]) as tf.SymbolicTensor;
    const mx = L.maximum().apply([ha, hb]) as tf.SymbolicTensor;
    const o1 = L.dense({ units: 3, activation: "softmax", ...init(65) }).apply(cat) as tf.SymbolicTensor;
    const both = L.concatenate().apply([avg, mx]) as tf.SymbolicTensor;
    const o2 = L.dense({ units: 2, ...init(67) }).apply(both) as tf.SymbolicTensor;
    const m = tf.model({ inputs: [a, b], outputs: [o1, o2] });
    await compareNative(
      m,
      { loss: "categoricalCrossentropy", heads: [{ loss: "categoricalCrossentropy", weight: 0.7 }, { loss: "meanSquaredError", weight: 2 }] },
      [floats([9, 5], 12), floats([9, 5], 13)],
      [targets("categoricalCrossentropy", [9, 3], 14), targets("meanSquaredError", [9, 2], 15)],
      "two heads",
    );
    m.dispose();
  });

  test("MultiHeadAttention: self, causal, cross, with an attention mask, a query mask and dropout; PositionEmbedding", async () => {
    const T = 5;
    const d = 6;
    const cases: Array<[string, (x: tf.SymbolicTensor, ctx: tf.SymbolicTensor, m: tf.SymbolicTensor) => tf.SymbolicTensor, number]> = [
      ["self", (x) => mt.multiHeadAttention({ numHeads: 2, keyDim: 3, kernelInitializer: tf.initializers.glorotUniform({ seed: 71 }), biasInitializer: tf.initializers.randomNormal({ seed: 72, stddev: 0.1 }) }).apply(x) as tf.SymbolicTensor, 1],
      ["causal with dropout", (x) => mt.multiHeadAttention({ numHeads: 3, keyDim: 2, valueDim: 4, dropout: 0.3, kernelInitializer: tf.initializers.glorotUniform({ seed: 73 }) }).apply(x, { useCausalMask: true }) as tf.SymbolicTensor, 1],
      ["cross, no bias, output 7", (x, c) => mt.multiHeadAttention({ numHeads: 2, keyDim: 4, useBias: false, outputShape: 7, kernelInitializer: tf.initializers.glorotUniform({ seed: 74 }) }).apply([x, c]) as tf.SymbolicTensor, 2],
      ["query, value, key and an attention mask", (x, c, m) => mt.multiHeadAttention({ numHeads: 2, keyDim: 3, kernelInitializer: tf.initializers.glorotUniform({ seed: 75 }) }).apply([x, c, c], { attentionMask: m }) as tf.SymbolicTensor, 3],
    ];
    for (const [what, attend, inputs] of cases) {
      const ids = tf.input({ shape: [T] });
      const other = tf.input({ shape: [4, 5] });
      const mask = tf.input({ shape: [T, 4] });
      const tok = L.embedding({ inputDim: 11, outputDim: d, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 76 }) }).apply(ids) as tf.SymbolicTensor;
      const pos = mt.positionEmbedding({ sequenceLength: 8, initializer: tf.initializers.randomNormal({ seed: 77 }) }).apply(tok) as tf.SymbolicTensor;
      const x = L.add().apply([tok, pos]) as tf.SymbolicTensor;
      const a = attend(x, other, mask);
      const out = L.dense({ units: 3, activation: "softmax", ...init(78) }).apply(L.flatten().apply(a) as tf.SymbolicTensor) as tf.SymbolicTensor;
      const m = tf.model({ inputs: [ids, other, mask].slice(0, inputs), outputs: out });
      const attMask = floats([4, T, 4], 16, 0, 1);
      attMask.data.forEach((v, i) => (attMask.data[i] = v > 0.3 ? 1 : 0));
      const xs = [ids2(4, T), floats([4, 4, 5], 17), attMask].slice(0, inputs);
      await compareNative(m, { loss: "categoricalCrossentropy" }, xs, [targets("categoricalCrossentropy", [4, 3], 18)], `attention ${what}`);
      m.dispose();
    }
    // A query mask from Embedding's maskZero, which in self-attention masks the keys too.
    const idsIn = tf.input({ shape: [T] });
    const e = L.embedding({ inputDim: 11, outputDim: d, maskZero: true, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 79 }) }).apply(idsIn) as tf.SymbolicTensor;
    const a = mt.multiHeadAttention({ numHeads: 2, keyDim: 3, kernelInitializer: tf.initializers.glorotUniform({ seed: 80 }) }).apply(e) as tf.SymbolicTensor;
    const o = L.dense({ units: 2, ...init(81) }).apply(L.globalAveragePooling1d({}).apply(a) as tf.SymbolicTensor) as tf.SymbolicTensor;
    const m = tf.model({ inputs: idsIn, outputs: o });
    const x = ids2(4, T);
    for (let r = 0; r < 4; r++) for (let t = T - r; t < T; t++) x.data[r * T + t] = 0;
    await compareNative(m, { loss: "meanSquaredError" }, [x], [targets("meanSquaredError", [4, 2], 19)], "attention with a query mask");
    m.dispose();
  });
});

describe("nested models", () => {
  test("a Sequential and a functional model applied inside a functional one (a shared nested model called twice)", async () => {
    const inner = tf.sequential({ layers: [L.dense({ units: 6, inputShape: [5], activation: "tanh", ...init(91) }), L.batchNormalization(), L.dense({ units: 5, ...init(92) })] });
    const fx = tf.input({ shape: [5] });
    const fnInner = tf.model({ inputs: fx, outputs: L.dense({ units: 4, activation: "relu", ...init(93) }).apply(fx) as tf.SymbolicTensor });
    const x = tf.input({ shape: [5] });
    const a = inner.apply(x) as tf.SymbolicTensor;
    const b = inner.apply(a) as tf.SymbolicTensor;
    const c = fnInner.apply(b) as tf.SymbolicTensor;
    const out = L.dense({ units: 3, activation: "softmax", ...init(94) }).apply(c) as tf.SymbolicTensor;
    const m = tf.model({ inputs: x, outputs: out });
    await compareNative(m, { loss: "categoricalCrossentropy" }, [floats([7, 5], 21)], [targets("categoricalCrossentropy", [7, 3], 22)], "nested models");
    m.dispose();
  });
});

function ids2(rows: number, T: number): ReturnType<typeof ids> {
  return ids([rows, T], 20, 11, 1);
}

