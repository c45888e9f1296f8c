import type * as tf from "@tensorflow/tfjs";
import { outputShapeIn } from "./layer-nodes";
import { maskedOutputs } from "./masks";

/**
 * A point between two layers (in the order the model lists them) where it could be split into
 * stages. A stage passes one tensor (an activation) to the next, so a point is a cut only where
 * exactly one activation crosses it: between residual blocks, never inside one, where the skip
 * connection crosses beside the main path. The model's inputs do not cross: the driver hands
 * each to every stage that reads it; its outputs leave at the stage that makes them.
 */
export type Cut =
  | {
      ok: true;
      /** The layer whose output crosses (at the model's start and end: "input" and "output", nothing crosses). */
      producer: string;
      /** The crossing tensor's shape, batch dimension first (null); at the start, the first input's. */
      shape: Array<number | null>;
    }
  | {
      ok: false;
      /** The layers whose outputs cross this point (none: two parts of the model with nothing between them). */
      crossing: string[];
      /** The block the point falls inside: from its first layer to the one that merges it. */
      block: { first: string; last: string };
      /** The layer whose mask the crossing activation carries (Embedding's maskZero, Masking): a stage would pass the activation without it. */
      mask?: string;
    };

/** Where a model may be split: cuts[j] is the point before layer j (cuts[0] the input, cuts[L] the output). */
export interface GraphCuts {
  cuts: Cut[];
  /** For each model input, the layers (by index) that read it. */
  inputReaders: number[][];
  /** For each model output, the layer (by index) that makes it. */
  outputMakers: number[];
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

/**
 * The model's cut points. A Sequential model is a chain: every point is a cut. A functional
 * model is walked as its topology lists it (an order in which every layer comes after its
 * inputs): a tensor crosses point j when it is made before layer j and used at or after it.
 */
export function graphCuts(model: tf.LayersModel): GraphCuts {
  const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer");
  const first = [...(model.inputs[0]?.shape ?? [])];
  if (model.getClassName() === "Sequential") {
    const cuts: Cut[] = [
      { ok: true, producer: "input", shape: first },
      ...layers.map((l) => ({ ok: true as const, producer: l.name, shape: outputShapeIn(model, l) })),
    ];
    return {
      cuts: withoutMasks(model, cuts),
      inputReaders: [[0]],
      outputMakers: [layers.length - 1],
      unsplittable: null,
    };
  }
  const cfg = (model.toJSON(null, false) as unknown as Topology).config;
  const listed = cfg?.layers;
  if (!listed || !cfg.input_layers || !cfg.output_layers)
    return {
      cuts: [],
      inputReaders: [],
      outputMakers: [],
      unsplittable: `its topology (class ${model.getClassName()}) lists no layers, inputs and outputs`,
    };
  const kept = listed.filter((l) => l.class_name !== "InputLayer");
  const shared = kept.find((l) => (l.inbound_nodes?.length ?? 0) > 1);
  if (shared)
    return {
      cuts: [],
      inputReaders: [],
      outputMakers: [],
      unsplittable: `layer "${shared.name}" (${shared.class_name}) is called ${shared.inbound_nodes!.length} times (a shared layer), and a stage holds each layer once`,
    };
  const position = new Map(kept.map((l, i) => [l.name, i]));
  const inputs = cfg.input_layers.map(([name]) => name);
  const inputReaders = inputs.map((name) =>
    kept.flatMap((l, i) => ((l.inbound_nodes?.[0] ?? []).some(([from]) => from === name) ? [i] : [])),
  );
  const outputMakers = cfg.output_layers.map(([name]) => position.get(name) ?? -1);
  const unused = inputs.findIndex((_, k) => inputReaders[k]!.length === 0);
  if (unused >= 0 || outputMakers.includes(-1))
    return {
      cuts: [],
      inputReaders,
      outputMakers,
      unsplittable:
        unused >= 0 ? `input "${inputs[unused]}" is read by no layer` : "an output is an input passed through",
    };
  const cuts = pointsOf(model, kept, tensorLives(kept, position), first);
  markBlocks(cuts, kept);
  return { cuts: withoutMasks(model, cuts), inputReaders, outputMakers, unsplittable: null };
}

/** Each point between the listed layers: a cut where one tensor crosses it, else a point inside a block (marked after). */
function pointsOf(
  model: tf.LayersModel,
  kept: readonly TopologyLayer[],
  tensors: ReadonlyMap<string, { producer: string; made: number; lastUse: number }>,
  first: Array<number | null>,
): Cut[] {
  const cuts: Cut[] = [];
  for (let j = 0; j <= kept.length; j++) {
    const crossing = [...tensors.values()].filter((t) => t.made < j && t.lastUse >= j);
    if (j === 0 || j === kept.length)
      cuts.push({
        ok: true,
        producer: j === 0 ? "input" : "output",
        shape: j === 0 ? first : [...(model.outputs[0]?.shape ?? [])],
      });
    else if (crossing.length === 1)
      cuts.push({
        ok: true,
        producer: crossing[0]!.producer,
        shape: outputShapeIn(model, model.getLayer(crossing[0]!.producer)),
      });
    else cuts.push({ ok: false, crossing: crossing.map((t) => t.producer), block: { first: "", last: "" } });
  }
  return cuts;
}

/** The points an activation carrying a mask crosses are not cuts. */
function withoutMasks(model: tf.LayersModel, cuts: Cut[]): Cut[] {
  const masked = maskedOutputs(model);
  if (masked.size === 0) return cuts;
  return cuts.map((c, j) =>
    c.ok && j > 0 && j < cuts.length - 1 && masked.has(c.producer)
      ? {
          ok: false,
          crossing: [c.producer],
          block: { first: c.producer, last: c.producer },
          mask: masked.get(c.producer)!,
        }
      : c,
  );
}

/** Each activation (by the layer, node and index that make it): where it is made and last read by a layer. */
function tensorLives(
  kept: readonly TopologyLayer[],
  position: ReadonlyMap<string, number>,
): Map<string, { producer: string; made: number; lastUse: number }> {
  const tensors = new Map<string, { producer: string; made: number; lastUse: number }>();
  kept.forEach((l, i) =>
    (l.inbound_nodes?.[0] ?? []).forEach(([producer, node, index]) => {
      const made = position.get(producer);
      if (made === undefined) return; // a model input: fed to its readers directly
      const key = `${producer}/${node}/${index}`;
      const t = tensors.get(key) ?? { producer, made, lastUse: i };
      t.lastUse = Math.max(t.lastUse, i);
      tensors.set(key, t);
    }),
  );
  return tensors;
}

/**
 * Marks each block: a run of points that are not cuts, from the layer after the cut before the
 * run to the layer before the cut after it.
 */
function markBlocks(cuts: Cut[], kept: readonly TopologyLayer[]): void {
  for (let j = 0; j < cuts.length;) {
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
}

/** How a point that is not a cut reads in a message. */
export function describeCut(c: Extract<Cut, { ok: false }>): string {
  if (c.mask)
    return `after "${c.crossing[0]}", whose output carries the mask "${c.mask}" makes, which a stage would not pass on with the activation`;
  if (c.crossing.length === 0)
    return `between "${c.block.first}" and "${c.block.last}", where no tensor passes from one part of the model to the other`;
  return `inside the block from "${c.block.first}" to "${c.block.last}" (${c.crossing.length} tensors cross there: the outputs of ${c.crossing.map((p) => `"${p}"`).join(", ")})`;
}
