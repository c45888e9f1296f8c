import * as tf from "@tensorflow/tfjs";
import { layers as mt } from "../../sdk/model/layers/index";

/** The zoo's transformers: pre-norm blocks (GPT-2's order) of meshtrain's MultiHeadAttention and a GELU MLP. */

const L = tf.layers;

/** A transformer's sizes: sequence length, width, heads, blocks, vocabulary, dropout (0 for a model compared with model.fit). */
export interface Size {
  T?: number;
  d?: number;
  heads?: number;
  blocks?: number;
  vocab?: number;
  dropout?: number;
}
type Sym = tf.SymbolicTensor;

function glorot(seed: number): ReturnType<typeof tf.initializers.glorotUniform> {
  return tf.initializers.glorotUniform({ seed });
}

/** x + MHA(LN(x)); then x + MLP(LN(x)). */
function block(x: Sym, d: number, heads: number, causal: boolean, seed: number, dropout: number): Sym {
  const h = L.layerNormalization({ epsilon: 1e-5 }).apply(x) as Sym;
  const a = mt.multiHeadAttention({ numHeads: heads, keyDim: d / heads, dropout, kernelInitializer: glorot(seed) }).apply(h, { useCausalMask: causal }) as Sym;
  const r = L.add().apply([x, a]) as Sym;
  const h2 = L.layerNormalization({ epsilon: 1e-5 }).apply(r) as Sym;
  const f = L.dense({ units: 4 * d, activation: "gelu", kernelInitializer: glorot(seed + 1) }).apply(h2) as Sym;
  const f2 = L.dense({ units: d, kernelInitializer: glorot(seed + 2) }).apply(f) as Sym;
  const dropped = L.dropout({ rate: dropout }).apply(f2) as Sym;
  return L.add().apply([r, dropped]) as Sym;
}

/** Token and position embeddings of ids [T], summed. */
function embed(ids: Sym, vocab: number, T: number, d: number, seed: number): Sym {
  const tok = L.embedding({ inputDim: vocab, outputDim: d, embeddingsInitializer: tf.initializers.randomNormal({ stddev: 0.02, seed }) }).apply(ids) as Sym;
  const pos = mt.positionEmbedding({ sequenceLength: T, initializer: tf.initializers.randomNormal({ stddev: 0.02, seed: seed + 1 }) }).apply(tok) as Sym;
  return L.add().apply([tok, pos]) as Sym;
}

/** A 2-block encoder over 128 tokens of a 5,000-word vocabulary, d 128, 4 heads, averaged and classified in 2. */
export function transformerEncoder(seed = 1, o: Size = {}): tf.LayersModel {
  const { T = 128, d = 128, heads = 4, blocks = 2, vocab = 5000, dropout = 0.1 } = o;
  const ids = tf.input({ shape: [T] });
  let x = embed(ids, vocab, T, d, seed);
  for (let b = 0; b < blocks; b++) x = block(x, d, heads, false, seed + 10 * (b + 1), dropout);
  x = L.layerNormalization({ epsilon: 1e-5 }).apply(x) as Sym;
  const pooled = L.globalAveragePooling1d({}).apply(x) as Sym;
  return tf.model({ inputs: ids, outputs: L.dense({ units: 2, activation: "softmax", kernelInitializer: glorot(seed + 99) }).apply(pooled) as Sym, name: "transformer" });
}

/** A GPT-style causal decoder over 128 characters of 65, 4 blocks, d 128, 4 heads: the next character at every position. */
export function charDecoder(seed = 1, o: Size = {}): tf.LayersModel {
  const { T = 128, d = 128, heads = 4, blocks = 4, vocab = 65, dropout = 0.1 } = o;
  const ids = tf.input({ shape: [T] });
  let x = embed(ids, vocab, T, d, seed);
  for (let b = 0; b < blocks; b++) x = block(x, d, heads, true, seed + 10 * (b + 1), dropout);
  x = L.layerNormalization({ epsilon: 1e-5 }).apply(x) as Sym;
  return tf.model({ inputs: ids, outputs: L.dense({ units: vocab, activation: "softmax", kernelInitializer: glorot(seed + 99) }).apply(x) as Sym, name: "gpt" });
}
