import type * as tf from "@tensorflow/tfjs";

type Shape = Array<number | null>;

/** A call of a layer: what TF.js records of it (its inbound node). */
interface LayerNode {
  inputShapes: tf.Shape | tf.Shape[];
  outputShapes: tf.Shape | tf.Shape[];
}

/**
 * The call through which `model` runs `layer`. A layer called more than once has a node per call,
 * and TF.js refuses to name its shape when they differ: a nested model's first node is its own
 * graph's (a Sequential built for [4] and applied to [7, 4] outputs [null, 3] there and
 * [null, 7, 3] here). The model's graph lists the nodes it holds; a Sequential's does not, and
 * its layers are called in order, the last call being its own.
 */
export function nodeIn(model: tf.LayersModel, layer: tf.layers.Layer): LayerNode | null {
  const nodes = (layer as unknown as { inboundNodes: LayerNode[] }).inboundNodes;
  const held = (model as unknown as { containerNodes?: ReadonlySet<string> }).containerNodes;
  for (let i = nodes.length - 1; i >= 0; i--) if (held?.has(`${layer.name}_ib-${i}`)) return nodes[i]!;
  return nodes[nodes.length - 1] ?? null;
}

/** The (first) output shape of `layer` as `model` calls it. */
export function outputShapeIn(model: tf.LayersModel, layer: tf.layers.Layer): Shape {
  const node = nodeIn(model, layer);
  return node ? firstShape(node.outputShapes) : firstShape(layer.outputShape);
}

/** The (first) input shape of `layer` as `model` calls it, or null where it was never called. */
export function inputShapeIn(model: tf.LayersModel, layer: tf.layers.Layer): Shape | null {
  const node = nodeIn(model, layer);
  return node ? firstShape(node.inputShapes) : null;
}

/** Whether `layer` is a model nested in another (a tf.model or tf.sequential called as a layer). */
export function isNestedModel(layer: tf.layers.Layer): layer is tf.LayersModel {
  return Array.isArray((layer as Partial<tf.LayersModel>).layers);
}

/** Layers with several inputs or outputs report a list of shapes; planning uses the first. */
export function firstShape(shape: tf.Shape | tf.Shape[]): Shape {
  if (shape.length > 0 && Array.isArray(shape[0])) return [...(shape as tf.Shape[])[0]!];
  return [...(shape as tf.Shape)];
}
