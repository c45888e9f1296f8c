import type * as tf from "@tensorflow/tfjs";

/** A layer in a functional model's topology (model.toJSON()), as far as its wiring goes. */
interface TopologyLayer {
  name: string;
  class_name: string;
  /** One entry per call of the layer; each lists its inputs as [layer, node, tensor, kwargs]. */
  inbound_nodes: Array<Array<[string, number, number, unknown?]>>;
}

interface FunctionalConfig {
  layers: TopologyLayer[];
  input_layers: unknown[];
  output_layers: Array<[string, number, number]>;
}

/**
 * Why the model's layers are not one chain (each layer fed by the one before it alone), or
 * null when they are. Splitting a model into stages cuts such a chain; a branch or a merge
 * would need tensors from more than one earlier stage. Sequential models are chains.
 */
export function branchOf(model: tf.LayersModel): string | null {
  if (model.getClassName() === "Sequential") return null;
  const topology = model.toJSON(null, false) as unknown as { config?: Partial<FunctionalConfig> };
  const cfg = topology.config;
  if (!cfg || !Array.isArray(cfg.layers) || !Array.isArray(cfg.input_layers) || !Array.isArray(cfg.output_layers)) {
    return `its topology (class ${model.getClassName()}) lists no layers, inputs and outputs`;
  }
  if (cfg.input_layers.length !== 1 || cfg.output_layers.length !== 1)
    return `it has ${cfg.input_layers.length} inputs and ${cfg.output_layers.length} outputs`;
  const consumers = new Map<string, string[]>();
  for (const l of cfg.layers) {
    for (const node of l.inbound_nodes)
      for (const [from] of node) consumers.set(from, [...(consumers.get(from) ?? []), l.name]);
  }
  for (const l of cfg.layers) {
    const fed = consumers.get(l.name) ?? [];
    if (fed.length > 1)
      return `layer "${l.name}" (${l.class_name}) feeds ${fed.length} layers (${fed.join(", ")}): a branch`;
  }
  let previous: string | null = null;
  for (const l of cfg.layers) {
    if (l.class_name === "InputLayer") {
      previous = l.name;
      continue;
    }
    if (l.inbound_nodes.length !== 1)
      return `layer "${l.name}" (${l.class_name}) is called ${l.inbound_nodes.length} times in the model (a shared layer)`;
    const inputs = l.inbound_nodes[0]!.map(([from]) => from);
    if (inputs.length !== 1)
      return `layer "${l.name}" (${l.class_name}) takes ${inputs.length} inputs (${inputs.join(", ")}): a merge`;
    if (inputs[0] !== previous)
      return `layer "${l.name}" (${l.class_name}) takes its input from "${inputs[0]}", not from the layer before it ("${previous}")`;
    previous = l.name;
  }
  if (cfg.output_layers[0]![0] !== previous)
    return `its output is layer "${cfg.output_layers[0]![0]}", not the last layer ("${previous}")`;
  return null;
}
