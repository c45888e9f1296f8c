import type * as tf from "@tensorflow/tfjs";

/**
 * A point between two layers (in the order the model lists them) where it could be split into
 * stages. A stage passes one tensor to the next, so a point is a cut only where exactly one
 * tensor crosses it: between residual blocks, never inside one, where the skip connection
 * crosses beside the main path.
 */
export type Cut =
  | {
      ok: true;
      /** The layer whose output crosses (the InputLayer at the start of a functional model). */
      producer: string;
      /** The crossing tensor's shape, batch dimension first (null). */
      shape: Array<number | null>;
    }
  | {
      ok: false;
      /** The layers whose outputs cross this point. */
      crossing: string[];
      /** The block the point falls inside: from its first layer to the one that merges it. */
      block: { first: string; last: string };
    };

/** Where a model may be split: cuts[j] is the point before layer j (cuts[0] the input, cuts[L] the output). */
export interface GraphCuts {
  cuts: Cut[];
  /** Why no stage strategy can split this model at all, or null. */
  unsplittable: string | null;
}

type Inbound = [string, number, number, unknown?];

interface TopologyLayer {
  name: string;
  class_name: string;
  inbound_nodes?: Inbound[][];
}

interface Topology {
  class_name?: string;
  config?: { layers?: TopologyLayer[]; input_layers?: Inbound[]; output_layers?: Inbound[] };
}

function shapeOf(layer: tf.layers.Layer): Array<number | null> {
  const s = layer.outputShape;
  return Array.isArray(s[0]) ? [...(s[0] as Array<number | null>)] : [...(s as Array<number | null>)];
}

/**
 * The model's cut points. A Sequential model is a chain: every point is a cut. A functional
 * model is walked as its topology lists it (an order in which every layer comes after its
 * inputs): a tensor crosses point j when it is made before layer j and used at or after it.
 */
export function graphCuts(model: tf.LayersModel): GraphCuts {
  const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer");
  if (model.getClassName() === "Sequential") {
    const input = [...(model.inputs[0]?.shape ?? [])];
    return { cuts: [{ ok: true, producer: "input", shape: input }, ...layers.map((l) => ({ ok: true as const, producer: l.name, shape: shapeOf(l) }))], unsplittable: null };
  }
  const cfg = (model.toJSON(null, false) as unknown as Topology).config;
  const listed = cfg?.layers;
  if (!listed || !cfg.input_layers || !cfg.output_layers) return { cuts: [], unsplittable: `its topology (class ${model.getClassName()}) lists no layers, inputs and outputs` };
  if (cfg.input_layers.length !== 1 || cfg.output_layers.length !== 1) {
    return { cuts: [], unsplittable: `it has ${cfg.input_layers.length} inputs and ${cfg.output_layers.length} outputs; stage strategies split models with one of each` };
  }
  const kept = listed.filter((l) => l.class_name !== "InputLayer");
  const shared = kept.find((l) => (l.inbound_nodes?.length ?? 0) > 1);
  if (shared) return { cuts: [], unsplittable: `layer "${shared.name}" (${shared.class_name}) is called ${shared.inbound_nodes!.length} times (a shared layer), and a stage holds each layer once` };
  const position = new Map(kept.map((l, i) => [l.name, i]));
  // Each tensor (by the layer, node and index that make it): where it is made and where last used.
  const tensors = new Map<string, { producer: string; made: number; lastUse: number }>();
  const use = ([producer, node, index]: Inbound, at: number): void => {
    const key = `${producer}/${node}/${index}`;
    const t = tensors.get(key) ?? { producer, made: position.get(producer) ?? -1, lastUse: at };
    t.lastUse = Math.max(t.lastUse, at);
    tensors.set(key, t);
  };
  kept.forEach((l, i) => l.inbound_nodes?.[0]?.forEach((ref) => use(ref, i)));
  use(cfg.output_layers[0]!, kept.length);
  const cuts: Cut[] = [];
  for (let j = 0; j <= kept.length; j++) {
    const crossing = [...tensors.values()].filter((t) => t.made < j && t.lastUse >= j);
    if (crossing.length === 1) {
      const producer = crossing[0]!.producer;
      cuts.push({ ok: true, producer, shape: crossing[0]!.made < 0 ? [...(model.inputs[0]?.shape ?? [])] : shapeOf(model.getLayer(producer)) });
      continue;
    }
    cuts.push({ ok: false, crossing: crossing.map((t) => t.producer), block: { first: "", last: "" } });
  }
  // A block is a run of points that are not cuts: from the layer after the cut before the run to the layer before the cut after it.
  for (let j = 0; j < cuts.length; ) {
    if (cuts[j]!.ok) {
      j++;
      continue;
    }
    let end = j;
    while (end + 1 < cuts.length && !cuts[end + 1]!.ok) end++;
    const block = { first: kept[Math.max(0, j - 1)]!.name, last: kept[Math.min(end, kept.length - 1)]!.name };
    for (let k = j; k <= end; k++) (cuts[k] as Extract<Cut, { ok: false }>).block = block;
    j = end + 1;
  }
  return { cuts, unsplittable: null };
}

/** How a point that is not a cut reads in a message. */
export function describeCut(c: Extract<Cut, { ok: false }>): string {
  return `inside the block from "${c.block.first}" to "${c.block.last}" (${c.crossing.length} tensors cross there: the outputs of ${c.crossing.map((p) => `"${p}"`).join(", ")})`;
}
