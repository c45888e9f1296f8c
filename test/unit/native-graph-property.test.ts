import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import fc from "fast-check";
import { nativeAvailable } from "../helpers/backends";
import { compareNative, floats, ids, targets } from "../helpers/native-compare";
import { layers as mt } from "../../sdk/model/layers/index";

/**
 * Random graphs over sequences, of odd sizes: blocks drawn from the layers sequence models use
 * (Dense, LayerNormalization, BatchNormalization, MultiHeadAttention, LSTM, GRU, SimpleRNN,
 * Conv1D, pooling, Dropout, merges), each as a residual branch or in line, on ids with padding
 * masked or on floats. The native step's loss, gradient and state equal autodiff's.
 */

tf.enableProdMode();
nativeAvailable();

const L = tf.layers;
type Sym = tf.SymbolicTensor;
type Block = "dense" | "layerNorm" | "batchNorm" | "attention" | "causal" | "lstm" | "gru" | "rnn" | "conv" | "dropout" | "concat" | "multiply";

interface Spec {
  T: number;
  d: number;
  ids: boolean;
  mask: boolean;
  blocks: Array<{ kind: Block; residual: boolean; units: number }>;
  head: "pool" | "flatten" | "last";
  batch: number;
  seed: number;
}

function block(x: Sym, b: Spec["blocks"][number], d: number, seed: number, T: number): Sym {
  const init = { kernelInitializer: tf.initializers.glorotUniform({ seed }) };
  const rnnInit = { ...init, recurrentInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }), biasInitializer: tf.initializers.randomNormal({ seed: seed + 2, stddev: 0.1 }) };
  switch (b.kind) {
    case "dense":
      return L.dense({ units: d, activation: "gelu", ...init }).apply(x) as Sym;
    case "layerNorm":
      return L.layerNormalization().apply(x) as Sym;
    case "batchNorm":
      return L.batchNormalization({ momentum: 0.8 }).apply(x) as Sym;
    case "attention":
      return mt.multiHeadAttention({ numHeads: 2, keyDim: b.units, ...init }).apply(x) as Sym;
    case "causal":
      return mt.multiHeadAttention({ numHeads: 1, keyDim: b.units, valueDim: b.units + 1, dropout: 0.2, ...init }).apply(x, { useCausalMask: true }) as Sym;
    case "lstm":
      return L.lstm({ units: d, returnSequences: true, recurrentDropout: 0.1, ...rnnInit }).apply(x) as Sym;
    case "gru":
      return L.gru({ units: d, returnSequences: true, goBackwards: true, ...rnnInit }).apply(x) as Sym;
    case "rnn":
      return L.simpleRNN({ units: d, returnSequences: true, dropout: 0.15, ...rnnInit }).apply(x) as Sym;
    case "conv":
      return L.conv1d({ filters: d, kernelSize: 3, padding: b.units % 2 || T < 3 ? "same" : "valid", activation: "relu", ...init }).apply(x) as Sym;
    case "dropout":
      return L.dropout({ rate: 0.3 }).apply(x) as Sym;
    case "concat": {
      const a = L.dense({ units: b.units, ...init }).apply(x) as Sym;
      const c = L.dense({ units: d - b.units, activation: "tanh", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 3 }) }).apply(x) as Sym;
      return L.concatenate().apply([a, c]) as Sym;
    }
    case "multiply":
      return L.multiply().apply([x, L.dense({ units: d, activation: "sigmoid", ...init }).apply(x) as Sym]) as Sym;
  }
}

/** Layers that would meet a mask (from maskZero) where tfjs-layers reshapes it: merges. */
const MERGES = new Set<Block>(["concat", "multiply"]);

function build(s: Spec): tf.LayersModel {
  const input = tf.input({ shape: s.ids ? [s.T] : [s.T, s.d] });
  let x: Sym = s.ids ? (L.embedding({ inputDim: 13, outputDim: s.d, maskZero: s.mask, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: s.seed }) }).apply(input) as Sym) : input;
  s.blocks.forEach((b, k) => {
    const y = block(x, b, s.d, s.seed + 10 * (k + 1), x.shape[1] as number);
    // A valid convolution shortens the sequence: no residual around it.
    x = b.residual && y.shape[1] === x.shape[1] ? (L.add().apply([x, y]) as Sym) : y;
  });
  const head = s.head === "pool" ? (L.globalAveragePooling1d({}).apply(x) as Sym) : s.head === "flatten" ? (L.flatten().apply(x) as Sym) : (L.lstm({ units: 3, kernelInitializer: tf.initializers.glorotUniform({ seed: s.seed + 99 }) }).apply(x) as Sym);
  return tf.model({ inputs: input, outputs: L.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: s.seed + 98 }) }).apply(head) as Sym });
}

const specs = fc
  .record({
    // At least 2 steps: tfjs-layers' RNNs with returnSequences fail on sequences of one (their stack of one step throws).
    T: fc.integer({ min: 2, max: 6 }),
    d: fc.integer({ min: 2, max: 7 }),
    ids: fc.boolean(),
    mask: fc.boolean(),
    blocks: fc.array(fc.record({ kind: fc.constantFrom<Block>("dense", "layerNorm", "batchNorm", "attention", "causal", "lstm", "gru", "rnn", "conv", "dropout", "concat", "multiply"), residual: fc.boolean(), units: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 4 }),
    head: fc.constantFrom<Spec["head"]>("pool", "flatten", "last"),
    batch: fc.integer({ min: 1, max: 5 }),
    seed: fc.integer({ min: 1, max: 1e6 }),
  })
  // A mask meets neither a merge (refused, so the model would not compile) nor a residual add.
  .map((s): Spec => (s.ids && s.mask ? { ...s, blocks: s.blocks.filter((b) => !MERGES.has(b.kind)).map((b) => ({ ...b, residual: false })) } : { ...s, mask: false }))
  .filter((s) => s.blocks.length > 0)
  .map((s) => ({ ...s, blocks: s.blocks.map((b) => ({ ...b, units: Math.min(b.units, s.d - 1) || 1 })) }));

test("random sequence graphs of odd sizes: the native step equals autodiff", async () => {
  await fc.assert(
    fc.asyncProperty(specs, async (s) => {
      const m = build(s);
      const x = s.ids ? ids([s.batch, s.T], s.seed, 13, 0) : floats([s.batch, s.T, s.d], s.seed);
      await compareNative(m, { loss: "categoricalCrossentropy" }, [x], [targets("categoricalCrossentropy", [s.batch, 3], s.seed + 1)], JSON.stringify(s), { seed: s.seed });
      m.dispose();
    }),
    { numRuns: 60, seed: 11 },
  );
});
