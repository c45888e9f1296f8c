import type * as tf from "@tensorflow/tfjs";
import { graphCuts, type Cut } from "../model/cuts";
import { PlanError } from "../errors/errors";
import { forwardFlops } from "./flops";
import { inputShapeIn, isNestedModel, outputShapeIn } from "../model/layer-nodes";
import { perSample } from "./per-sample";

/** One layer as plans see it: class, output shape, parameters, FLOPs per sample. */
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
  /** A nested model's own layers, run `positions` times a sample: its FLOPs and kept activations are theirs. */
  nested?: { layers: LayerSummary[]; positions: number };
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
  /** The float non-trainable weights (BatchNormalization's moving statistics, frozen layers' weights), in model.nonTrainableWeights order. */
  state: Array<{ layer: number; name: string; shape: number[] }>;
  /** Where stages may be split: cuts[j] is the point before layer j (cuts[0] the input, cuts[layers.length] the output). */
  cuts: Cut[];
  /** For each model input, the layers that read it (a stage holding one gets that input from the driver). */
  inputReaders: number[][];
  /** For each model output, the layer that makes it (the stage holding it computes that output's loss). */
  outputMakers: number[];
  /** Why no stage strategy can split the model at all (a shared layer), or null. */
  unsplittable: string | null;
}

/**
 * The layers are numbered as a Sequential model numbers them: a functional model's InputLayer
 * holds nothing and is left out, so a chain built either way has the same plan.
 */
export function summarizeModel(model: tf.LayersModel): ModelSummary {
  const { cuts, inputReaders, outputMakers, unsplittable } = graphCuts(model);
  let previous: Array<number | null> = [...(model.inputs[0]?.shape ?? [])];
  const kept = model.layers.filter((l) => l.getClassName() !== "InputLayer");
  const layerOf = new Map(kept.flatMap((l, i) => l.weights.map((w) => [w, i] as const)));
  const layers = kept.map((l) => {
    const trainable = l.trainableWeights.reduce((n, w) => n + w.shape.reduce<number>((a, d) => a * (d ?? 1), 1), 0);
    let out: Array<number | null> = [];
    try {
      out = outputShapeIn(model, l);
    } catch {
      out = [];
    }
    // A functional model's layer says what it takes; in a Sequential model it is the predecessor's output.
    const input = inputShapeIn(model, l) ?? previous;
    previous = out;
    const activation = (l.getConfig() as { activation?: unknown }).activation;
    const nested = isNestedModel(l) ? nestedOf(l, out) : null;
    return {
      ...(typeof activation === "string" ? { activation } : {}),
      ...(nested ? { nested } : {}),
      name: l.name,
      className: l.getClassName(),
      params: l.countParams(),
      trainableParams: trainable,
      inputShape: input,
      outputShape: out,
      flopsPerSample: nested
        ? nested.layers.reduce((n, x) => n + x.flopsPerSample, 0) * nested.positions
        : forwardFlops(l, input, out),
    };
  });
  refuseUnpriced(layers);
  return {
    name: model.name,
    inputShape: [...(model.inputs[0]?.shape ?? [])],
    outputShape: [...(model.outputs[0]?.shape ?? [])],
    layers,
    paramCount: layers.reduce((n, l) => n + l.params, 0),
    trainableParamCount: layers.reduce((n, l) => n + l.trainableParams, 0),
    flopsPerSample: layers.reduce((n, l) => n + l.flopsPerSample, 0),
    variables: kept.flatMap((l, layer) =>
      l.trainableWeights.map((w) => ({ layer, name: w.originalName ?? w.name, shape: w.shape.map((d) => d ?? 1) })),
    ),
    state: model.nonTrainableWeights
      .filter((w) => w.dtype === "float32")
      .map((w) => ({ layer: layerOf.get(w) ?? -1, name: w.originalName ?? w.name, shape: w.shape.map((d) => d ?? 1) })),
    cuts,
    inputReaders,
    outputMakers,
    unsplittable,
  };
}

/**
 * A nested model's own layers, and how many times the outer model runs them a sample: more than
 * once where it calls them on more positions than they were built for (a Sequential built for
 * [4] applied to [7, 4] runs 7 times).
 */
function nestedOf(inner: tf.LayersModel, out: ReadonlyArray<number | null>): NonNullable<LayerSummary["nested"]> {
  const own = summarizeModel(inner);
  const positions = perSample(own.outputShape) > 0 && out.length > 0 ? perSample(out) / perSample(own.outputShape) : 1;
  return { layers: own.layers, positions };
}

/** A layer whose FLOPs are not a finite count cannot be priced: refused naming it, before any plan is simulated with it. */
function refuseUnpriced(layers: readonly LayerSummary[]): void {
  const unpriced = layers.find((l) => !Number.isFinite(l.flopsPerSample) || l.flopsPerSample < 0);
  if (unpriced) {
    throw new PlanError(
      `layer ${unpriced.name} (${unpriced.className}) has no finite cost: ${unpriced.flopsPerSample} FLOPs per sample`,
      {
        hint: "report the model: each layer should have a cost",
        details: { layer: unpriced.name },
      },
    );
  }
}
