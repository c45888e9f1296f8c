import * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../data/dataset";
import { topologyOf } from "../model/topology";
import { copyLayerWeights } from "./chain-model";

interface LayerJson {
  class_name: string;
  name?: string;
  config: { name?: string; batch_input_shape?: Array<number | null> } & Record<string, unknown>;
}

/**
 * The model as this fit runs it: where an input takes sequences of any length (`inputShape:
 * [null, 3]`), a copy holding the same weights whose inputs take the dataset's shapes, which every
 * sample of a dataset shares. Stages then pass activations of a known size, and profiles and
 * plans price the real length instead of one step. Models with no such input come back as they are.
 */
export async function withSampleShapes(model: tf.LayersModel, dataset: Dataset): Promise<tf.LayersModel> {
  const open = model.inputs.some((s) => s.shape.slice(1).some((d) => d === null));
  if (!open || dataset.inputs.length !== model.inputs.length) return model;
  const json = topologyOf(model) as unknown as { class_name: string; config: { layers: LayerJson[] } };
  const layers = json.config.layers;
  if (model.getClassName() === "Sequential") {
    const first = layers[0];
    if (!first?.config.batch_input_shape) return model;
    first.config.batch_input_shape = [null, ...dataset.inputs[0]!.sampleShape];
  } else {
    model.inputNames.forEach((name, i) => {
      const input = layers.find((l) => l.class_name === "InputLayer" && (l.name ?? l.config.name) === name);
      if (input) input.config.batch_input_shape = [null, ...dataset.inputs[i]!.sampleShape];
    });
  }
  const sized = await tf.models.modelFromJSON(json as unknown as Parameters<typeof tf.models.modelFromJSON>[0]);
  copyLayerWeights(model, sized);
  return sized;
}
