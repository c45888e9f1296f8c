import type * as tf from "@tensorflow/tfjs";
import { forwardFlops } from "./flops";

export interface LayerSummary {
  name: string;
  className: string;
  params: number;
  trainableParams: number;
  /** Shapes with the batch dimension first (null). */
  inputShape: Array<number | null>;
  outputShape: Array<number | null>;
  /** Forward floating-point operations per sample (estimate; see flops.ts). */
  flopsPerSample: number;
  /** The layer's activation function, when it has one ("relu", "softmax", "linear", ...). */
  activation?: string;
}

/** What planning needs to know of a model: read from it, never changing it. */
export interface ModelSummary {
  name: string;
  inputShape: Array<number | null>;
  outputShape: Array<number | null>;
  layers: LayerSummary[];
  paramCount: number;
  trainableParamCount: number;
  /** Forward FLOPs per sample, all layers. */
  flopsPerSample: number;
  /** The trainable variables in the order training sees them (model.trainableWeights), with their layer's index. */
  variables: Array<{ layer: number; name: string; shape: number[] }>;
}

function firstShape(shape: tf.Shape | tf.Shape[]): Array<number | null> {
  // Layers with several outputs report a list of shapes; planning uses the first.
  if (shape.length > 0 && Array.isArray(shape[0])) return [...(shape as tf.Shape[])[0]!];
  return [...(shape as tf.Shape)];
}

export function summarizeModel(model: tf.LayersModel): ModelSummary {
  let previous: Array<number | null> = [...(model.inputs[0]?.shape ?? [])];
  const layers = model.layers.map((l) => {
    const trainable = l.trainableWeights.reduce((n, w) => n + w.shape.reduce<number>((a, d) => a * (d ?? 1), 1), 0);
    let out: Array<number | null> = [];
    try {
      out = firstShape(l.outputShape);
    } catch {
      out = [];
    }
    // In a Sequential model each layer takes its predecessor's output.
    const input = previous;
    previous = out;
    const activation = (l.getConfig() as { activation?: unknown }).activation;
    return {
      ...(typeof activation === "string" ? { activation } : {}),
      name: l.name,
      className: l.getClassName(),
      params: l.countParams(),
      trainableParams: trainable,
      inputShape: input,
      outputShape: out,
      flopsPerSample: forwardFlops(l, input, out),
    };
  });
  return {
    name: model.name,
    inputShape: [...(model.inputs[0]?.shape ?? [])],
    outputShape: [...(model.outputs[0]?.shape ?? [])],
    layers,
    paramCount: layers.reduce((n, l) => n + l.params, 0),
    trainableParamCount: layers.reduce((n, l) => n + l.trainableParams, 0),
    flopsPerSample: layers.reduce((n, l) => n + l.flopsPerSample, 0),
    variables: model.layers.flatMap((l, layer) => l.trainableWeights.map((w) => ({ layer, name: w.originalName ?? w.name, shape: w.shape.map((d) => d ?? 1) }))),
  };
}
