import type * as tf from "@tensorflow/tfjs";

/** A symbolic tensor of tfjs-layers, as far as the graph needs it. */
interface Symbolic {
  id: number;
  shape: Array<number | null>;
}

/** A layer call (tfjs-layers' Node). */
interface LayerNode {
  outboundLayer: tf.layers.Layer;
  inputTensors: Symbolic[];
  outputTensors: Symbolic[];
}

/** A functional model's wiring (tfjs-layers' Container). */
interface Container {
  inputs: Symbolic[];
  outputs: Symbolic[];
  nodesByDepth: Record<string, LayerNode[]>;
}

/** One layer call, in an order where every call comes after the calls its inputs come from. */
export interface GraphNode {
  layer: tf.layers.Layer;
  /** Its inputs and outputs as tensor ids of the graph. */
  inputs: number[];
  outputs: number[];
  /**
   * The model it belongs to, nested models flattened: "" for the outer one, else the chain of
   * nested models' names. A mask does not cross from one to another (a nested model's call
   * passes none in, and gives none out).
   */
  scope: string;
}

/** A model's layer calls as one graph, every nested model inlined. */
export interface Graph {
  nodes: GraphNode[];
  /** Each tensor's shape as built, batch dimension (null) first. */
  shapes: Array<Array<number | null>>;
  inputs: number[];
  outputs: number[];
}

const CONTAINERS = new Set(["Sequential", "Model", "Functional"]);

function isContainer(layer: tf.layers.Layer): boolean {
  return CONTAINERS.has(layer.getClassName());
}

/** A model's wiring; a Sequential keeps it in an inner model it builds on first use. */
function containerOf(model: tf.layers.Layer): Container {
  const m = model as unknown as { model?: Container; build?: () => void } & Partial<Container>;
  if (model.getClassName() === "Sequential") {
    if (!m.model) m.build?.();
    if (!m.model) throw new Error(`the Sequential model ${model.name} is not built`);
    return m.model;
  }
  if (!m.nodesByDepth || !m.inputs || !m.outputs)
    throw new Error(`${model.name} (${model.getClassName()}) has no layer graph`);
  return m as Container;
}

/** The model's layer calls in order, nested models inlined; or why they cannot be read. */
export function graphOf(model: tf.LayersModel): Graph | string {
  const g: Graph = { nodes: [], shapes: [], inputs: [], outputs: [] };
  const fresh = (shape: Array<number | null>): number => g.shapes.push([...shape]) - 1;
  try {
    const outer = containerOf(model);
    g.inputs = outer.inputs.map((t) => fresh(t.shape));
    g.outputs = walk(outer, g.inputs, "", g, fresh);
  } catch (err) {
    return (err as Error).message;
  }
  return g;
}

/** Appends the container's calls to the graph, its inputs being `inputs`; returns its outputs' ids. */
function walk(
  c: Container,
  inputs: readonly number[],
  scope: string,
  g: Graph,
  fresh: (shape: Array<number | null>) => number,
): number[] {
  const ids = new Map<number, number>();
  c.inputs.forEach((t, i) => ids.set(t.id, inputs[i]!));
  const depths = Object.keys(c.nodesByDepth)
    .map(Number)
    .sort((a, b) => b - a);
  for (const depth of depths) {
    for (const node of c.nodesByDepth[depth]!) {
      const layer = node.outboundLayer;
      if (layer.getClassName() === "InputLayer") continue;
      const ins = node.inputTensors.map((t) => {
        const id = ids.get(t.id);
        if (id === undefined) throw new Error(`${layer.name} reads a tensor made outside the model`);
        return id;
      });
      if (isContainer(layer)) {
        const inner = containerOf(layer);
        if (inner.inputs.length !== ins.length)
          throw new Error(
            `the nested model ${layer.name} takes ${inner.inputs.length} inputs but is called with ${ins.length}`,
          );
        const outs = walk(inner, ins, scope ? `${scope}/${layer.name}` : layer.name, g, fresh);
        node.outputTensors.forEach((t, i) => ids.set(t.id, outs[i]!));
        continue;
      }
      const outs = node.outputTensors.map((t) => fresh(t.shape));
      node.outputTensors.forEach((t, i) => ids.set(t.id, outs[i]!));
      g.nodes.push({ layer, inputs: ins, outputs: outs, scope });
    }
  }
  return c.outputs.map((t) => {
    const id = ids.get(t.id);
    if (id === undefined) throw new Error(`an output of ${scope || "the model"} is made by no layer call`);
    return id;
  });
}
