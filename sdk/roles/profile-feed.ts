import * as tf from "@tensorflow/tfjs";
import type { LossName } from "../protocol/loss-names";
import { elementCount, type Tensorlike } from "../protocol/tensor";

/** One model input as a profile feeds it: its per-sample shape, and the Embedding's input dimension when ids enter there. */
export interface FedInput {
  shape: number[];
  /** Integer ids below this go in (an Embedding reads the input); null: any values. */
  idsBelow: number | null;
}

/** What a profile feeds a model: inputs of their real shape and range, labels of the output's shape. */
export interface Feed {
  inputs: FedInput[];
  /** Each output's per-sample shape. */
  outShapes: number[][];
}

/**
 * The model's inputs and output as a profile must feed them. An input an Embedding reads takes
 * integer ids below its input dimension: random normal values there are out of range (a
 * GatherV2 failure on the first negative id).
 */
export function feedOf(model: tf.LayersModel): Feed {
  const inputs = model.inputs.map((s) => {
    const readers = model.layers.filter((l) => l.inboundNodes.some((n) => n.inputTensors.some((t) => t.id === s.id)));
    const dims = readers.filter((l) => l.getClassName() === "Embedding").map((l) => Number(l.getConfig().inputDim));
    return { shape: s.shape.slice(1) as number[], idsBelow: dims.length > 0 ? Math.min(...dims) : null };
  });
  return { inputs, outShapes: model.outputs.map((o) => o.shape.slice(1) as number[]) };
}

/** `b` samples of one input: ids below its Embedding's dimension, else uniform values in [0, 1). */
export function sampleInput(input: FedInput, b: number): Tensorlike {
  const n = b * elementCount(input.shape);
  const below = input.idsBelow;
  const data =
    below === null
      ? Float32Array.from({ length: n }, () => Math.random())
      : Float32Array.from({ length: n }, () => Math.floor(Math.random() * below));
  return { data, shape: [b, ...input.shape] };
}

/** Labels of the shape and kind the loss takes: one class per row for the crossentropies, values in [0, 1) otherwise. */
export function sampleLabels(loss: LossName, b: number, outShape: readonly number[]): Tensorlike {
  const classes = outShape[outShape.length - 1] ?? 1;
  if (loss === "sparseCategoricalCrossentropy")
    return { data: Float32Array.from({ length: b }, (_, i) => i % classes), shape: [b, 1] };
  const data = new Float32Array(b * elementCount(outShape));
  if (loss === "categoricalCrossentropy")
    for (let r = 0; r < data.length / classes; r++) data[r * classes + (r % classes)] = 1;
  else for (let i = 0; i < data.length; i++) data[i] = Math.random();
  return { data, shape: [b, ...outShape] };
}
