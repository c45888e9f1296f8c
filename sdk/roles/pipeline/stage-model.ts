import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";

interface LayerJson {
  name?: string;
  class_name: string;
  config: Record<string, unknown>;
  inbound_nodes?: Inbound[][];
}

type Inbound = [string, number, number, unknown?];

/**
 * The part of a model a stage holds, layers [from, to) (InputLayers not counted), as a model of
 * its own taking the tensor the stage before passes (of shape `inputShape`). Built only from
 * TF.js's registered classes.
 */
export function stageTopology(
  topology: Record<string, unknown>,
  from: number,
  to: number,
  inputShape: readonly number[],
  index: number,
): Record<string, unknown> {
  const cfg = topology.config as { name?: string; layers?: LayerJson[] } | undefined;
  if (!cfg || !Array.isArray(cfg.layers))
    throw new ModelError(
      `the model's topology (class ${String(topology.class_name)}) lists no layers to split into stages`,
    );
  if (to <= from) throw new ModelError(`stage ${index} holds no layers ([${from}, ${to}))`);
  if (topology.class_name === "Sequential")
    return sequentialStage(topology, cfg as { layers: LayerJson[] }, from, to, inputShape, index);
  return functionalStage(topology, cfg as { layers: LayerJson[] }, from, to, inputShape, index);
}

function sequentialStage(
  topology: Record<string, unknown>,
  cfg: { name?: string; layers: LayerJson[] },
  from: number,
  to: number,
  inputShape: readonly number[],
  index: number,
): Record<string, unknown> {
  const layers = cfg.layers.slice(from, to).map((l) => ({ class_name: l.class_name, config: { ...l.config } }));
  for (const l of layers) {
    delete l.config.batch_input_shape;
    delete l.config.input_shape;
  }
  layers[0]!.config.batch_input_shape = [null, ...inputShape];
  return { ...topology, config: { ...cfg, name: `${cfg.name ?? "model"}_stage${index}`, layers } };
}

/** The InputLayer a stage after the first takes its one crossing activation through. */
function stageInput(index: number, inputShape: readonly number[]): LayerJson {
  const name = `stage${index}_input`;
  return {
    name,
    class_name: "InputLayer",
    config: { batch_input_shape: [null, ...inputShape], dtype: "float32", sparse: false, name },
    inbound_nodes: [],
  };
}

/**
 * A functional model's stage: its layers, with the model's own InputLayers for the model inputs
 * they read (the driver sends those) and, after stage 0, a new InputLayer for the one activation
 * crossing into the stage. Its outputs: the one activation crossing out (every stage but the
 * last), then the model outputs its layers make, in the model's order. The planner cuts only
 * where one activation crosses; anything else arriving here is refused.
 */
function functionalStage(
  topology: Record<string, unknown>,
  cfg: { name?: string; layers: LayerJson[]; input_layers?: Inbound[]; output_layers?: Inbound[] },
  from: number,
  to: number,
  inputShape: readonly number[],
  index: number,
): Record<string, unknown> {
  const kept = cfg.layers.filter((l) => l.class_name !== "InputLayer");
  const slice = kept.slice(from, to);
  const inside = new Set(slice.map((l) => l.name));
  const modelInputs = (cfg.input_layers ?? []).map(([name]) => name);
  const key = ([name, node, t]: Inbound): string => `${name}/${node}/${t}`;
  const incoming = new Map<string, Inbound>();
  const read = new Set<string>();
  for (const l of slice) {
    for (const ref of l.inbound_nodes?.[0] ?? []) {
      if (modelInputs.includes(ref[0])) read.add(ref[0]);
      else if (!inside.has(ref[0])) incoming.set(key(ref), ref);
    }
  }
  const later = kept.slice(to).flatMap((l) => l.inbound_nodes?.[0] ?? []);
  const outgoing = new Map(later.filter((ref) => inside.has(ref[0])).map((ref) => [key(ref), ref] as const));
  const made = (cfg.output_layers ?? []).filter((ref) => inside.has(ref[0]));
  const receives = from > 0 ? 1 : 0;
  const passes = to < kept.length ? 1 : 0;
  if (incoming.size !== receives || outgoing.size !== passes) {
    throw new ModelError(
      `stage ${index} (layers [${from}, ${to})) would take ${incoming.size} activation(s) and pass on ${outgoing.size}; a stage takes one from the stage before and passes one on`,
      {
        hint: "cut the model only where one tensor crosses (the planner does); see plan().explain()",
      },
    );
  }
  const [enter] = [...incoming.values()];
  const [leave] = [...outgoing.values()];
  const entry = enter ? stageInput(index, inputShape) : null;
  const rewire = (ref: Inbound): Inbound =>
    enter && key(ref) === key(enter) ? [entry!.name!, 0, 0, ref[3] ?? {}] : ref;
  const inputLayers = cfg.layers.filter((l) => l.class_name === "InputLayer" && read.has(l.name!));
  const layers = [
    ...(entry ? [entry] : []),
    ...inputLayers,
    ...slice.map((l) => ({
      ...l,
      config: { ...l.config },
      inbound_nodes: (l.inbound_nodes ?? []).map((node) => node.map(rewire)),
    })),
  ];
  const inputs = [
    ...(entry ? [[entry.name, 0, 0]] : []),
    ...modelInputs.filter((n) => read.has(n)).map((n) => [n, 0, 0]),
  ];
  const outputs = [...(leave ? [[leave[0], leave[1], leave[2]]] : []), ...made.map((ref) => [ref[0], ref[1], ref[2]])];
  const name = `${cfg.name ?? "model"}_stage${index}`;
  return { ...topology, config: { ...cfg, name, layers, input_layers: inputs, output_layers: outputs } };
}

type LayerVariable = tf.LayersModel["weights"][number];

/**
 * A stage's weights in the order the driver sends and reads them: the trainable weights of its
 * layers in the whole model's order, then their non-trainable ones. A functional stage orders
 * its own layers by depth in the stage, which need not be the whole model's order.
 */
export function stageWeightOrder(
  stage: tf.LayersModel,
  topology: Record<string, unknown>,
  from: number,
  to: number,
): LayerVariable[] {
  const cfg = topology.config as { layers: LayerJson[] };
  const names =
    topology.class_name === "Sequential"
      ? stage.layers.map((l) => l.name)
      : cfg.layers
          .filter((l) => l.class_name !== "InputLayer")
          .slice(from, to)
          .map((l) => l.name!);
  const layers = names.map((n) => stage.getLayer(n));
  return [...layers.flatMap((l) => l.trainableWeights), ...layers.flatMap((l) => l.nonTrainableWeights)];
}

/**
 * Dropout layers draw the same masks for a micro-batch's forward pass and its recomputation in
 * the backward pass (GPipe recomputes activations): their seed is set per step and micro-batch.
 */
export function seedDropout(model: tf.LayersModel, step: number, micro: number): void {
  model.layers.forEach((l, i) => {
    if (l.getClassName() === "Dropout" || l.getClassName() === "SpatialDropout1D") {
      (l as unknown as { seed: number }).seed = (step * 1_000_003 + micro * 9_176 + i * 31) >>> 0;
    }
  });
}
