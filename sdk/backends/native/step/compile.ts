import type * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../../protocol/loss-names";
import { branchOf } from "../../../model/chain";
import { isStepActivation } from "./activation";
import { ConvOp, PoolOp, type WindowConfig } from "./conv-op";
import { ActivationOp, AliasOp, DenseOp } from "./dense";
import { isStepLoss, STEP_LOSSES, type StepLoss } from "./loss";
import type { GradientSlot, StepOp } from "./op";

type Layer = tf.layers.Layer;
type Config = Record<string, unknown>;

/** A model compiled to a replica step, or why it cannot be. */
export type StepPlan = { ok: true; ops: StepOp[]; loss: StepLoss; inShape: number[] } | { ok: false; why: string };

const REGULARIZERS = ["kernelRegularizer", "biasRegularizer", "activityRegularizer"] as const;

function perSample(shape: tf.Shape | tf.Shape[]): number[] | null {
  if (shape.length > 0 && Array.isArray(shape[0])) return null;
  const rest = (shape as tf.Shape).slice(1);
  return rest.every((d): d is number => typeof d === "number") ? rest : null;
}

function pair(v: unknown): [number, number] {
  return Array.isArray(v) ? [Number(v[0]), Number(v[1] ?? v[0])] : [Number(v), Number(v)];
}

/** The variable behind a layer weight, and where its gradient goes (null: frozen). */
function slotOf(w: tf.LayerVariable | undefined, slots: Slots): GradientSlot | null {
  if (!w) return null;
  const variable = w.read() as tf.Variable;
  slots.seen.add(variable);
  return { variable, offset: slots.offsets.get(variable) ?? null };
}

/** Each trainable variable's offset in the flat gradient, and the variables the compiled layers hold. */
interface Slots {
  offsets: Map<tf.Variable, number>;
  seen: Set<tf.Variable>;
}

/** One layer as an op, or why it is not compiled. */
function opOf(l: Layer, inShape: number[], outShape: number[], slots: Slots): StepOp | string {
  const cfg = l.getConfig() as Config;
  const cls = l.getClassName();
  const name = `${l.name} (${cls})`;
  const reg = REGULARIZERS.find((k) => cfg[k] != null);
  if (reg) return `${name} has a ${reg}`;
  const act = cfg.activation ?? "linear";
  if ((cls === "Dense" || cls === "Conv2D" || cls === "Activation") && !isStepActivation(act)) return `${name} uses the ${String(act)} activation`;
  const actName = isStepActivation(act) ? act : "linear";
  const weights = l.weights as tf.LayerVariable[];
  const kernel = slotOf(weights[0], slots);
  const bias = cfg.useBias === false ? null : slotOf(weights[1], slots);
  switch (cls) {
    case "Flatten":
    case "Reshape":
      return new AliasOp(l.name, outShape);
    case "Activation":
      return new ActivationOp(l.name, outShape, actName);
    case "Dense":
      return new DenseOp(l.name, inShape, outShape, kernel!, bias, actName);
    case "Conv2D":
    case "MaxPooling2D":
    case "AveragePooling2D": {
      if (cfg.dataFormat !== undefined && cfg.dataFormat !== "channelsLast") return `${name} is channels-first`;
      if (inShape.length !== 3) return `${name} takes input of shape [${inShape.join(", ")}]`;
      const padding = cfg.padding === "same" ? "same" : cfg.padding === "valid" ? "valid" : null;
      if (!padding) return `${name} pads by ${String(cfg.padding)}`;
      if (cls === "Conv2D") {
        const dilation = pair(cfg.dilationRate ?? 1);
        if (dilation[0] !== 1 || dilation[1] !== 1 || (cfg.groups !== undefined && cfg.groups !== 1)) return `${name} is dilated or grouped`;
        const win: WindowConfig = { kernel: pair(cfg.kernelSize), strides: pair(cfg.strides ?? 1), padding };
        return new ConvOp(l.name, inShape, outShape, win, kernel!, bias, actName);
      }
      const size = pair(cfg.poolSize ?? 2);
      const win: WindowConfig = { kernel: size, strides: cfg.strides == null ? size : pair(cfg.strides), padding };
      return new PoolOp(l.name, inShape, outShape, win, cls === "MaxPooling2D" ? "max" : "avg");
    }
    default:
      return `${name} is not one of the layers a native step computes (Dense, Conv2D, MaxPooling2D, AveragePooling2D, Flatten, Reshape, Activation)`;
  }
}

/**
 * Compiles a single-input, single-output chain of supported layers and a supported loss into
 * the ops of a native replica step, whose gradients go to `vars` (the trainable variables, in the
 * order of the flat gradient). Anything else is left to TF.js's autodiff, and the reason said.
 */
export function compileStep(model: tf.LayersModel, loss: LossName, vars: readonly tf.Variable[]): StepPlan {
  if (!isStepLoss(loss)) return { ok: false, why: `the ${loss} loss is not one a native step computes (${STEP_LOSSES.join(", ")})` };
  const layers = compileLayers(model, vars);
  return layers.ok ? { ...layers, loss } : layers;
}

/**
 * Why the model's layers cannot train inside a native step, or null where they can (the loss
 * aside): a plan made in the driver asks it, as ZeRO-2 and -3 work only there. Compiling builds
 * no buffers, so asking is cheap.
 */
export function nativeLayersWhyNot(model: tf.LayersModel): string | null {
  const r = compileLayers(model, model.trainableWeights.map((w) => w.read() as tf.Variable));
  return r.ok ? null : r.why;
}

/** The layers as the ops of a native step, whose gradients go to `vars`, or why not. */
function compileLayers(model: tf.LayersModel, vars: readonly tf.Variable[]): { ok: true; ops: StepOp[]; inShape: number[] } | { ok: false; why: string } {
  const branch = branchOf(model);
  if (branch) return { ok: false, why: `the layers are not one chain: ${branch}` };
  const inShape = perSample(model.inputs[0]?.shape ?? []);
  if (!inShape || model.inputs.length !== 1 || model.outputs.length !== 1) return { ok: false, why: "the model does not have one input and one output of fixed shape" };
  const slots: Slots = { offsets: new Map(), seen: new Set() };
  let at = 0;
  for (const v of vars) {
    slots.offsets.set(v, at);
    at += v.size;
  }
  const ops: StepOp[] = [];
  let shape = inShape;
  for (const l of model.layers) {
    if (l.getClassName() === "InputLayer") continue;
    const out = perSample(l.outputShape);
    if (!out) return { ok: false, why: `${l.name} has no fixed output shape` };
    if (out.includes(0)) return { ok: false, why: `${l.name}'s output is empty ([${out.join(", ")}])` };
    const op = opOf(l, shape, out, slots);
    if (typeof op === "string") return { ok: false, why: op };
    ops.push(op);
    shape = out;
  }
  const missing = vars.find((v) => !slots.seen.has(v));
  if (missing) return { ok: false, why: `the trainable variable ${missing.name} belongs to no compiled layer` };
  return { ok: true, ops, inShape };
}
