import type * as tf from "@tensorflow/tfjs";
import { isNestedModel } from "./layer-nodes";

/** A layer's entry in a topology: its class and config (a nested model's config lists its own layers). */
interface LayerEntry {
  class_name: string;
  name?: string;
  config: { name?: string; trainable?: boolean; layers?: LayerEntry[] } & Record<string, unknown>;
}

/**
 * A model's topology as workers rebuild it (model.toJSON), with what TF.js leaves out of it: a
 * nested model frozen as a whole (`inner.trainable = false`, the GAN pattern) serialises its
 * layers as trainable, and tf.models.modelFromJSON would bring it back training. Each layer of
 * such a model is written frozen instead, which rebuilds the same trainable weights in the same
 * order (model.weights: the trainable ones, then the rest).
 */
export function topologyOf(model: tf.LayersModel): Record<string, unknown> {
  const json = model.toJSON(null, false) as unknown as { config?: { layers?: LayerEntry[] } };
  markFrozen(model, json.config?.layers ?? []);
  return json as unknown as Record<string, unknown>;
}

/** Walks `container`'s layers beside their entries (by name, unique in a container), freezing each frozen nested model's entries. */
function markFrozen(container: tf.LayersModel, entries: LayerEntry[]): void {
  const byName = new Map(entries.map((e) => [e.name ?? e.config.name, e]));
  for (const layer of container.layers) {
    const entry = byName.get(layer.name);
    if (!isNestedModel(layer) || !entry) continue;
    if (!layer.trainable) freeze(entry);
    else markFrozen(layer, entry.config.layers ?? []);
  }
}

function freeze(entry: LayerEntry): void {
  entry.config.trainable = false;
  for (const e of entry.config.layers ?? []) freeze(e);
}
