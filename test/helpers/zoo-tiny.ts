import * as tf from "@tensorflow/tfjs";
import { datasets } from "../../sdk/index";
import type { Dataset } from "../../sdk/data/dataset";
import type { LossName } from "../../sdk/protocol/loss-names";
import { jena, mlpdrop, resnet20, sentiment, textgap, type ZooModel } from "../../bench/zoo/models";
import { charDecoder, transformerEncoder } from "../../bench/zoo/transformers";
import { randomArray } from "./backends";

/**
 * The zoo's architectures (bench/zoo) at sizes a test trains in seconds, dropout off (a step
 * is compared with model.fit's), each with a dataset of its inputs and targets.
 */
export interface TinyZoo {
  name: ZooModel;
  make: () => tf.LayersModel;
  loss: LossName;
  data: Dataset;
}

const N = 20;

function ids(rows: number, T: number, vocab: number, seed: number): tf.Tensor {
  return tf.tensor(Float32Array.from(randomArray(rows * T, seed, 1, vocab), Math.floor), [rows, T]);
}

function classes(rows: number, n: number, seed: number, perPosition?: number): tf.Tensor {
  const labels = Float32Array.from(randomArray(rows * (perPosition ?? 1), seed, 0, n), Math.floor);
  return tf.tensor(labels, perPosition ? [rows, perPosition, 1] : [rows, 1]);
}

function binary(rows: number, seed: number): tf.Tensor {
  return tf.tensor(Float32Array.from(randomArray(rows, seed, 0, 1), Math.round), [rows, 1]);
}

export function tinyZoo(): TinyZoo[] {
  return [
    { name: "resnet20", make: () => resnet20(3, { side: 6, widths: [3, 4], blocks: 1 }), loss: "sparseCategoricalCrossentropy", data: datasets.fromTensors(tf.tensor(randomArray(N * 108, 5, 0, 1), [N, 6, 6, 3]), classes(N, 10, 6)) },
    { name: "transformer", make: () => transformerEncoder(3, { T: 6, d: 8, heads: 2, blocks: 1, vocab: 20, dropout: 0 }), loss: "sparseCategoricalCrossentropy", data: datasets.fromTensors(ids(N, 6, 20, 7), classes(N, 2, 8)) },
    { name: "gpt", make: () => charDecoder(3, { T: 6, d: 8, heads: 2, blocks: 2, vocab: 12, dropout: 0 }), loss: "sparseCategoricalCrossentropy", data: datasets.fromTensors(ids(N, 6, 12, 9), classes(N, 12, 10, 6)) },
    { name: "sentiment", make: () => sentiment(3, { vocab: 30, dim: 5, units: 4, T: 7 }), loss: "binaryCrossentropy", data: datasets.fromTensors(ids(N, 7, 30, 11), binary(N, 12)) },
    { name: "jena", make: () => jena(3, { units: 4, T: 8, features: 3 }), loss: "meanAbsoluteError", data: datasets.fromTensors(tf.tensor(randomArray(N * 24, 13, 0, 1), [N, 8, 3]), tf.tensor(randomArray(N, 14, 0, 1), [N, 1])) },
    { name: "textgap", make: () => textgap(3, { vocab: 40, dim: 5, T: 9 }), loss: "binaryCrossentropy", data: datasets.fromTensors(ids(N, 9, 40, 15), binary(N, 16)) },
    { name: "mlpdrop", make: () => mlpdrop(3, { side: 4, units: 6, dropout: 0 }), loss: "categoricalCrossentropy", data: datasets.fromTensors(tf.tensor(randomArray(N * 16, 17, 0, 1), [N, 4, 4, 1]), tf.oneHot(tf.tensor1d(Float32Array.from(randomArray(N, 18, 0, 10), Math.floor), "int32"), 10).cast("float32")) },
  ];
}
