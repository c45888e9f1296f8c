import * as tf from "@tensorflow/tfjs";
import { branchOf } from "../model/chain";
import { topologyOf } from "../model/topology";
import { isNestedModel } from "../model/layer-nodes";

interface LayerJson {
  class_name: string;
  config: Record<string, unknown>;
}

/**
 * A functional model (tf.model) whose layers form a chain, as the Sequential model it amounts to,
 * holding the same weights: every strategy then cuts, sends and rebuilds it the one way it
 * knows. Sequential models, and functional ones with branches (trained whole by data and
 * parameter servers, refused by the planners that split layers), come back as they are.
 */
export async function asSequential(model: tf.LayersModel): Promise<tf.LayersModel> {
  if (model.getClassName() === "Sequential" || branchOf(model) !== null) return model;
  // A Sequential takes a nested model first in its list as that model's own graph, not called on the input: kept as it is.
  if (model.layers.some(isNestedModel)) return model;
  const cfg = (topologyOf(model) as unknown as { config: { name: string; layers: LayerJson[] } }).config;
  const input = cfg.layers.find((l) => l.class_name === "InputLayer");
  const layers = cfg.layers
    .filter((l) => l !== input)
    .map((l) => ({ class_name: l.class_name, config: { ...l.config } }));
  if (!input || layers.length === 0) return model;
  layers[0]!.config.batch_input_shape = input.config.batch_input_shape;
  if (input.config.dtype !== undefined) layers[0]!.config.dtype = input.config.dtype;
  const topology = { class_name: "Sequential", config: { name: cfg.name, layers } };
  const chain = await tf.models.modelFromJSON(topology as unknown as Parameters<typeof tf.models.modelFromJSON>[0]);
  copyLayerWeights(model, chain);
  return chain;
}

/** Every layer of `to` takes the weights of the layer of the same name in `from`. */
export function copyLayerWeights(from: tf.LayersModel, to: tf.LayersModel): void {
  for (const layer of to.layers) {
    if (layer.weights.length === 0) continue;
    const values = from.getLayer(layer.name).getWeights();
    layer.setWeights(values);
  }
}
