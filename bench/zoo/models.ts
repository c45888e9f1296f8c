import * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../sdk/protocol/loss-names";

/**
 * The models people train, built from stock tfjs-layers (and meshtrain's MultiHeadAttention):
 * the zoo bench:zoo measures beside PyTorch (bench/peers/torch_zoo.py builds the same
 * architectures) and the tests train under every strategy. Each says its input, target and loss.
 */

export const ZOO = ["resnet20", "resnet50", "transformer", "gpt", "sentiment", "jena", "textgap", "mlpdrop"] as const;
export type ZooModel = (typeof ZOO)[number];

export interface ZooEntry {
  build(seed?: number): tf.LayersModel;
  loss: LossName;
  /** One sample's input shape and, for ids, the vocabulary (ids in [1, vocab)); else floats in [0, 1). */
  input: number[];
  vocab?: number;
  /** Targets: class ids (sparse), 0/1 (binary) or values. */
  target: { kind: "class"; classes: number; perPosition?: boolean } | { kind: "binary" } | { kind: "value" };
  /** The batch the bench runs at, and what the model is. */
  batch: number;
  what: string;
}

const L = tf.layers;
type Sym = tf.SymbolicTensor;

function he(seed: number): ReturnType<typeof tf.initializers.heNormal> {
  return tf.initializers.heNormal({ seed });
}

/** conv -> BatchNormalization (-> relu), the unit of both ResNets. */
function convBn(x: Sym, filters: number, kernel: number, strides: number, relu: boolean, seed: number): Sym {
  const c = L.conv2d({ filters, kernelSize: kernel, strides, padding: "same", useBias: false, kernelInitializer: he(seed) }).apply(x) as Sym;
  const b = L.batchNormalization({ momentum: 0.9, epsilon: 1e-5 }).apply(c) as Sym;
  return relu ? (L.reLU().apply(b) as Sym) : b;
}

/** The zoo's architectures at other sizes: the tests train small ones of each under every strategy. */
export interface ZooSize {
  /** ResNet-20: image side, each stage's filters, blocks a stage. */
  side?: number;
  widths?: number[];
  blocks?: number;
  /** Recurrent and text models: vocabulary, embedding, units, sequence length, features. */
  vocab?: number;
  dim?: number;
  units?: number;
  T?: number;
  features?: number;
  /** Dropout rates (0 for a model compared with model.fit step for step). */
  dropout?: number;
}

/** ResNet-20 for CIFAR (He et al. 2016, section 4.2) with projection shortcuts (1x1 conv + BatchNormalization) where the shape changes. */
export function resnet20(seed = 1, o: ZooSize = {}): tf.LayersModel {
  const { side = 32, widths = [16, 32, 64], blocks = 3 } = o;
  const x = tf.input({ shape: [side, side, 3] });
  let h = convBn(x, widths[0]!, 3, 1, true, seed);
  let k = seed + 1;
  for (const [stage, filters] of widths.entries()) {
    for (let block = 0; block < blocks; block++) {
      const strides = stage > 0 && block === 0 ? 2 : 1;
      const a = convBn(h, filters, 3, strides, true, k++);
      const b = convBn(a, filters, 3, 1, false, k++);
      const short = strides !== 1 || (h.shape[3] as number) !== filters ? convBn(h, filters, 1, strides, false, k++) : h;
      h = L.reLU().apply(L.add().apply([b, short]) as Sym) as Sym;
    }
  }
  const pooled = L.globalAveragePooling2d({}).apply(h) as Sym;
  return tf.model({ inputs: x, outputs: L.dense({ units: 10, activation: "softmax", kernelInitializer: he(k) }).apply(pooled) as Sym, name: "resnet20" });
}

/** ResNet-50 (v1.5: the stride on the 3x3 convolution), 224 x 224 x 3, 1000 classes. */
function resnet50(seed = 1): tf.LayersModel {
  const x = tf.input({ shape: [224, 224, 3] });
  let h = convBn(x, 64, 7, 2, true, seed);
  h = L.maxPooling2d({ poolSize: 3, strides: 2, padding: "same" }).apply(h) as Sym;
  let k = seed + 1;
  for (const [stage, [blocks, width]] of ([[3, 64], [4, 128], [6, 256], [3, 512]] as const).entries()) {
    for (let block = 0; block < blocks; block++) {
      const strides = stage > 0 && block === 0 ? 2 : 1;
      const a = convBn(h, width, 1, 1, true, k++);
      const b = convBn(a, width, 3, strides, true, k++);
      const c = convBn(b, width * 4, 1, 1, false, k++);
      const short = block === 0 ? convBn(h, width * 4, 1, strides, false, k++) : h;
      h = L.reLU().apply(L.add().apply([c, short]) as Sym) as Sym;
    }
  }
  const pooled = L.globalAveragePooling2d({}).apply(h) as Sym;
  return tf.model({ inputs: x, outputs: L.dense({ units: 1000, activation: "softmax", kernelInitializer: he(k) }).apply(pooled) as Sym, name: "resnet50" });
}

/** tfjs-examples' sentiment model at its defaults: 10,000 words embedded in 128, an LSTM of 32, one sigmoid unit. */
export function sentiment(seed = 1, o: ZooSize = {}): tf.LayersModel {
  const { vocab = 10000, dim = 128, units = 32, T = 100 } = o;
  return tf.sequential({
    name: "sentiment",
    layers: [
      L.embedding({ inputDim: vocab, outputDim: dim, inputLength: T, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.05, maxval: 0.05, seed }) }),
      L.lstm({ units, kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }), recurrentInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
      L.dense({ units: 1, activation: "sigmoid", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 3 }) }),
    ],
  });
}

/** tfjs-examples' jena-weather GRU: 32 units over 120 steps of 14 features, one value predicted. */
export function jena(seed = 1, o: ZooSize = {}): tf.LayersModel {
  const { units = 32, T = 120, features = 14 } = o;
  return tf.sequential({
    name: "jena",
    layers: [
      L.gru({ units, inputShape: [T, features], kernelInitializer: tf.initializers.glorotUniform({ seed }), recurrentInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
      L.dense({ units: 1, kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) }),
    ],
  });
}

/** A text classifier: 20,000 words embedded in 64, averaged over 200 ids, one sigmoid unit. */
export function textgap(seed = 1, o: ZooSize = {}): tf.LayersModel {
  const { vocab = 20000, dim = 64, T = 200 } = o;
  return tf.sequential({
    name: "textgap",
    layers: [
      L.embedding({ inputDim: vocab, outputDim: dim, inputLength: T, embeddingsInitializer: tf.initializers.randomUniform({ minval: -0.05, maxval: 0.05, seed }) }),
      L.globalAveragePooling1d({}),
      L.dense({ units: 1, activation: "sigmoid", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
    ],
  });
}

/** MNIST's MLP 784-256-256-10 with Dropout 0.2 after each hidden layer and an L2 penalty of 1e-4 on the kernels. */
export function mlpdrop(seed = 1, o: ZooSize = {}): tf.LayersModel {
  const { side = 28, units = 256, dropout = 0.2 } = o;
  const l2 = (): ReturnType<typeof tf.regularizers.l2> => tf.regularizers.l2({ l2: 1e-4 });
  const dense = (n: number, activation: "relu" | "softmax", k: number): tf.layers.Layer => L.dense({ units: n, activation, kernelRegularizer: l2(), kernelInitializer: tf.initializers.glorotUniform({ seed: seed + k }) });
  return tf.sequential({
    name: "mlpdrop",
    layers: [L.flatten({ inputShape: [side, side, 1] }), dense(units, "relu", 0), L.dropout({ rate: dropout }), dense(units, "relu", 1), L.dropout({ rate: dropout }), dense(10, "softmax", 2)],
  });
}

/**
 * Not a zoo row: two Dense layers of a few weights. What a process holds above itself training
 * it (`node --expose-gc dist/bench/zoo/tfjs-zoo.js runtime native 8 20 0`) is the runtime's own
 * cost of building and stepping any model (compiled code, the replica's objects, the young
 * generation), which the plan's estimate does not count.
 */
export const RUNTIME_PROBE: ZooEntry = {
  build: (seed = 1) =>
    tf.sequential({
      layers: [
        L.dense({ units: 1, inputShape: [4], activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed }) }),
        L.dense({ units: 2, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 1 }) }),
      ],
    }),
  loss: "categoricalCrossentropy",
  input: [4],
  target: { kind: "class", classes: 2 },
  batch: 8,
  what: "two Dense layers of a few weights (the runtime's own memory)",
};

export const ZOO_MODELS: Readonly<Record<ZooModel, ZooEntry>> = {
  resnet20: { build: resnet20, loss: "sparseCategoricalCrossentropy", input: [32, 32, 3], target: { kind: "class", classes: 10 }, batch: 32, what: "ResNet-20 on CIFAR shapes (BatchNormalization, projection shortcuts)" },
  resnet50: { build: resnet50, loss: "sparseCategoricalCrossentropy", input: [224, 224, 3], target: { kind: "class", classes: 1000 }, batch: 16, what: "ResNet-50 (v1.5) at 224 x 224" },
  transformer: { build: (s) => transformerEncoder(s), loss: "sparseCategoricalCrossentropy", input: [128], vocab: 5000, target: { kind: "class", classes: 2 }, batch: 32, what: "2-block transformer encoder, 4-head MultiHeadAttention, d 128, 128 tokens" },
  gpt: { build: (s) => charDecoder(s), loss: "sparseCategoricalCrossentropy", input: [128], vocab: 65, target: { kind: "class", classes: 65, perPosition: true }, batch: 16, what: "causal character-level decoder (GPT-style, 4 layers, d 128, 4 heads, 128 tokens)" },
  sentiment: { build: sentiment, loss: "binaryCrossentropy", input: [100], vocab: 10000, target: { kind: "binary" }, batch: 64, what: "tfjs-examples' sentiment model (Embedding 10k x 128, LSTM 32)" },
  jena: { build: jena, loss: "meanAbsoluteError", input: [120, 14], target: { kind: "value" }, batch: 64, what: "jena-weather's GRU 32 over 120 x 14" },
  textgap: { build: textgap, loss: "binaryCrossentropy", input: [200], vocab: 20000, target: { kind: "binary" }, batch: 64, what: "Embedding 20k x 64 + GlobalAveragePooling1D + Dense" },
  mlpdrop: { build: mlpdrop, loss: "categoricalCrossentropy", input: [28, 28, 1], target: { kind: "class", classes: 10 }, batch: 64, what: "MLP 784-256-256-10, Dropout 0.2, L2 1e-4" },
};

import { charDecoder, transformerEncoder } from "./transformers";
