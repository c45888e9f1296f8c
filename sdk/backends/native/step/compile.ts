import type * as tf from "@tensorflow/tfjs";
import { graphOf, type Graph, type GraphNode } from "./graph";
import type { LayerCall } from "./layer-call";
import { LAYER_TABLE, layerClasses, type MaskRule } from "./layer-table";
import { MaskOp } from "./ops/mask";
import { sizeOf, type ParamSlot } from "./op";
import { penaltiesOf, type Penalty } from "./regularizers";
import { planSlots } from "./slots";
import type { Schedule, ScheduledOp } from "./schedule";
export type { Schedule, ScheduledOp } from "./schedule";
import { arrayBytes } from "./arrays";
import type { NativeMemory } from "../../../plan/memory";

/** A model as the native step computes it, whatever its inputs' lengths. */
export interface Program {
  graph: Graph;
  /** Trainable weights' offsets in the flat gradient. */
  offsets: Map<tf.Variable, number>;
  /** The schedule for these per-sample input shapes (made once per distinct shapes), or why not. */
  schedule(inShapes: readonly number[][]): Schedule | string;
}

/** A layer's weight by its name within the layer ("kernel"), or null when it has none. */
function weightNamed(layer: tf.layers.Layer, name: string): tf.LayerVariable | undefined {
  const re = new RegExp(`(^|/)${name}(_\\d+)?$`);
  return (layer.weights as tf.LayerVariable[]).find((w) => re.test(w.originalName));
}

/** The schedule's cache: a model with sequences of any length is compiled once per length seen (the last few kept). */
const KEPT = 8;

/**
 * Compiles a model to the native step, or says why it cannot be: a layer the step does not
 * compute (named), a mask a layer cannot take, a weight the compiled layers do not hold.
 * `vars` are the trainable weights in the order of the flat gradient.
 */
export function compileProgram(model: tf.LayersModel, vars: readonly tf.Variable[]): Program | string {
  const graph = graphOf(model);
  if (typeof graph === "string") return `its layer graph cannot be read: ${graph}`;
  const offsets = new Map<tf.Variable, number>();
  let at = 0;
  for (const v of vars) {
    offsets.set(v, at);
    at += v.size;
  }
  for (const node of graph.nodes) {
    const cls = node.layer.getClassName();
    if (!LAYER_TABLE[cls])
      return `${node.layer.name} (${cls}) is not one of the layers a native step computes (${layerClasses()})`;
  }
  const cache = new Map<string, Schedule | string>();
  const program: Program = {
    graph,
    offsets,
    schedule(inShapes) {
      const key = inShapes.map((s) => s.join("x")).join("|");
      let s = cache.get(key);
      if (s === undefined) {
        s = buildSchedule(graph, offsets, inShapes);
        if (cache.size >= KEPT) cache.delete(cache.keys().next().value!);
        cache.set(key, s);
      }
      return s;
    },
  };
  // Fixed shapes are checked now; a length left open (null) is checked at a stand-in of 2 steps, then at each length met.
  const declared = graph.inputs.map((t) => graph.shapes[t]!.slice(1).map((d) => d ?? 2));
  const first = program.schedule(declared);
  if (typeof first === "string") return first;
  const used = new Set(first.ops.flatMap((o) => o.op.params.map((p) => p.variable)));
  const missing = vars.find((v) => !used.has(v));
  if (missing) return `the trainable weight ${missing.name} belongs to no layer the step computes`;
  return program;
}

/** Per-sample output shapes of a call, from its layer and concrete input shapes. */
function outShapesOf(node: GraphNode, ins: number[][], graph: Graph): number[][] {
  const declared = node.outputs.map((t) => graph.shapes[t]!.slice(1));
  if (declared.every((s) => s.every((d) => d !== null))) return declared as number[][];
  const given = ins.map((s) => [null, ...s]);
  const out = node.layer.computeOutputShape(given.length === 1 ? given[0]! : given) as
    Array<number | null> | Array<Array<number | null>>;
  const list = Array.isArray(out[0]) ? (out as Array<Array<number | null>>) : [out as Array<number | null>];
  return list.map((s) => s.slice(1).map((d) => d ?? 1));
}

/** A layer's weight as a slot: where its gradient goes (null: not trained). */
function slotFor(layer: tf.layers.Layer, offsets: Map<tf.Variable, number>, weight: string): ParamSlot | null {
  const lv = weightNamed(layer, weight);
  if (!lv) return null;
  const variable = lv.read() as tf.Variable;
  return { variable, offset: offsets.get(variable) ?? null };
}

/** A schedule being built: graph tensors map to storages (an alias shares its input's); shapes stay per tensor. */
interface Building {
  graph: Graph;
  offsets: Map<tf.Variable, number>;
  storageOf: number[];
  shapeOf: number[][];
  sizes: number[];
  /** Each tensor's mask (its storage), by the model (scope) it is in. */
  masks: Map<string, number>;
  ops: ScheduledOp[];
  penalties: Map<tf.Variable, Penalty>;
}

function newStorage(b: Building, shape: number[]): number {
  return b.sizes.push(sizeOf(shape)) - 1;
}

function buildSchedule(
  graph: Graph,
  offsets: Map<tf.Variable, number>,
  inShapes: readonly number[][],
): Schedule | string {
  if (inShapes.length !== graph.inputs.length)
    return `the model takes ${graph.inputs.length} inputs, not ${inShapes.length}`;
  const b: Building = {
    graph,
    offsets,
    storageOf: [],
    shapeOf: [],
    sizes: [],
    masks: new Map(),
    ops: [],
    penalties: new Map(),
  };
  graph.inputs.forEach((t, i) => {
    b.shapeOf[t] = [...inShapes[i]!];
    b.storageOf[t] = newStorage(b, b.shapeOf[t]!);
  });
  for (const node of graph.nodes) {
    const why = addNode(b, node);
    if (why) return why;
  }
  // A penalty is added once its weight's gradient is final: after the backward pass of the first op using it (the last to run).
  for (const p of b.penalties.values())
    b.ops.find((o) => o.op.params.some((q) => q.variable === p.slot.variable))?.penalties.push(p);
  const s: Schedule = {
    ops: b.ops,
    sizes: b.sizes,
    grads: [],
    inputs: graph.inputs.map((t) => b.storageOf[t]!),
    outputs: graph.outputs.map((t) => b.storageOf[t]!),
    outShapes: graph.outputs.map((t) => b.shapeOf[t]!),
    slots: { value: [], grad: [], valueSizes: [], gradSizes: [], inputs: new Set() },
  };
  planGradients(s);
  s.slots = planSlots(s);
  return s;
}

/** Adds one layer call's op (or alias) and its outputs' masks; returns why it cannot, if it cannot. */
function addNode(b: Building, node: GraphNode): string | null {
  const layer = node.layer;
  const cls = layer.getClassName();
  const entry = LAYER_TABLE[cls]!;
  const name = `${layer.name} (${cls})`;
  const ins = node.inputs.map((t) => b.storageOf[t]!);
  const callShapes = node.inputs.map((t) => b.shapeOf[t]!);
  const inMasks = node.inputs.map((t) => b.masks.get(`${node.scope}:${t}`) ?? null);
  // tfjs-layers passes a layer the first input's mask, when any input has one.
  const maskIn = inMasks.some((m) => m !== null) ? inMasks[0]! : null;
  const cfg = layer.getConfig() as Record<string, unknown>;
  const rule: MaskRule = layer.supportsMasking ? entry.mask : "none";
  if (rule === "refuse" && maskIn !== null)
    return `a mask reaches ${name}, whose masks tfjs-layers reshapes (no later layer would read it as the same mask)`;
  let outShapes: number[][];
  try {
    outShapes = outShapesOf(node, callShapes, b.graph);
  } catch (err) {
    return `${name}'s output shape for inputs ${callShapes.map((s) => `[${s.join(", ")}]`).join(", ")}: ${(err as Error).message}`;
  }
  const call: LayerCall = {
    layer,
    name,
    cls,
    cfg,
    inShapes: callShapes,
    outShapes,
    masked: maskIn !== null,
    param: (weight) => slotFor(layer, b.offsets, weight),
  };
  const found = penaltiesOf(call);
  if (typeof found === "string") return found;
  for (const p of found) if (!b.penalties.has(p.slot.variable)) b.penalties.set(p.slot.variable, p);
  const outs = opOutputs(b, entry, call, ins, maskIn);
  if (typeof outs === "string") return outs;
  node.outputs.forEach((t, i) => {
    b.storageOf[t] = outs[i]!;
    b.shapeOf[t] = outShapes[i]!;
  });
  const maskOut = maskAfter(b, rule, cfg, maskIn, ins[0]!, callShapes[0]!, name);
  if (maskOut !== null) node.outputs.forEach((t) => b.masks.set(`${node.scope}:${t}`, maskOut));
  return null;
}

/** The call's outputs' storages: its input's where the layer only reshapes (an alias), else new ones its op writes. */
function opOutputs(
  b: Building,
  entry: (typeof LAYER_TABLE)[string],
  call: LayerCall,
  ins: number[],
  maskIn: number | null,
): number[] | string {
  if (entry.build === "alias" || entry.aliasIf?.(call.cfg)) {
    if (ins.length !== 1 || sizeOf(call.outShapes[0]!) !== b.sizes[ins[0]!])
      return `${call.name} changes the number of values`;
    return [ins[0]!];
  }
  const op = entry.build(call);
  if (typeof op === "string") return op;
  const outs = call.outShapes.map((sh) => newStorage(b, sh));
  b.ops.push({
    op,
    inputs: ins,
    outputs: outs,
    mask: maskIn,
    backward: false,
    needDx: [],
    addDx: [],
    zeroFirst: [],
    penalties: [],
  });
  return outs;
}

/** The mask a call's outputs carry (tfjs-layers gives all outputs of a call the first one's); a new one is made by a MaskOp. */
function maskAfter(
  b: Building,
  rule: MaskRule,
  cfg: Record<string, unknown>,
  maskIn: number | null,
  input: number,
  inShape: number[],
  name: string,
): number | null {
  if (rule === "pass" || (rule === "sequence" && cfg.returnSequences === true)) return maskIn;
  if (!((rule === "ids" && cfg.maskZero === true) || rule === "values")) return null;
  const mask = newStorage(b, rule === "ids" ? inShape : inShape.slice(0, -1));
  const cols = rule === "ids" ? 1 : inShape[inShape.length - 1]!;
  const op = new MaskOp(`${name} mask`, cols, rule === "ids" ? 0 : Number(cfg.maskValue ?? 0));
  b.ops.push({
    op,
    inputs: [input],
    outputs: [mask],
    mask: null,
    backward: false,
    needDx: [false],
    addDx: [false],
    zeroFirst: [],
    penalties: [],
  });
  return mask;
}

/**
 * Which storages need gradients (something before them trains, and they reach a loss), which
 * ops run backward, and for each input whether its gradient is written or added: the backward
 * pass runs the ops last first, so the first to reach a storage writes it and the rest add.
 */
function planGradients(s: Schedule): void {
  const n = s.sizes.length;
  const upstream = new Array<boolean>(n).fill(false);
  for (const o of s.ops) {
    const trains = o.op.params.some((p) => p.offset !== null);
    const up = trains || o.inputs.some((i) => upstream[i]);
    if (o.op instanceof MaskOp) continue;
    for (const out of o.outputs) upstream[out] = upstream[out] || up;
  }
  const reaches = new Array<boolean>(n).fill(false);
  for (const out of s.outputs) reaches[out] = true;
  for (let k = s.ops.length - 1; k >= 0; k--) {
    const o = s.ops[k]!;
    if (o.op instanceof MaskOp) continue;
    if (o.outputs.some((out) => reaches[out])) for (const i of o.inputs) reaches[i] = true;
  }
  s.grads = upstream.map((u, i) => u && reaches[i]!);
  const written = new Array<boolean>(n).fill(false);
  for (const out of s.outputs) if (s.grads[out]) written[out] = true;
  for (let k = s.ops.length - 1; k >= 0; k--) {
    const o = s.ops[k]!;
    const trains = o.op.params.some((p) => p.offset !== null);
    o.needDx = o.inputs.map((i) => !(o.op instanceof MaskOp) && s.grads[i]! && o.outputs.some((out) => s.grads[out]));
    o.backward =
      !(o.op instanceof MaskOp) && o.outputs.some((out) => s.grads[out]) && (trains || o.needDx.some(Boolean));
    if (!o.backward) {
      o.needDx = o.needDx.map(() => false);
      o.addDx = o.needDx.map(() => false);
      continue;
    }
    o.zeroFirst = o.outputs.filter((out) => s.grads[out] && !written[out]);
    o.addDx = o.inputs.map((i, j) => {
      if (!o.needDx[j]) return false;
      const add = written[i]!;
      written[i] = true;
      return add;
    });
  }
}

/**
 * What a plan made in the driver reads of the native step: why the model's layers cannot train
 * inside it (null where they can; ZeRO-2 and -3 work only there), and where they can, the bytes
 * its arrays take per sample and fixed (the memory estimate's activations), at the model's input
 * shapes (a length left open counted as 2). Compiling builds no arrays, so asking is cheap.
 */
export function nativeStepOptions(model: tf.LayersModel): {
  nativeLayers: string | null;
  nativeMemory: NativeMemory | null;
} {
  const r = compileProgram(
    model,
    model.trainableWeights.map((w) => w.read() as tf.Variable),
  );
  if (typeof r === "string") return { nativeLayers: r, nativeMemory: null };
  const s = r.schedule(r.graph.inputs.map((t) => r.graph.shapes[t]!.slice(1).map((d) => d ?? 2)));
  if (typeof s === "string") return { nativeLayers: s, nativeMemory: null };
  const one = arrayBytes(s, 1);
  const perSample = arrayBytes(s, 2) - one;
  return { nativeLayers: null, nativeMemory: { bytesPerSample: perSample, fixedBytes: one - perSample } };
}
