import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../errors/errors";
import type { LossName } from "../protocol/loss-names";
import type { Tensorlike } from "../protocol/tensor";
import { unknownClassHint } from "./modules";
// meshtrain's own layers (MultiHeadAttention, PositionEmbedding) register themselves with TF.js: models holding them build on both sides.
import "./layers/index";

/**
 * Builds a model from TF.js topology JSON and weights ("initial": its initializers' own, to time it). Only layer classes registered with TF.js
 * can be built: nothing that arrives over the wire is ever run as code.
 */
export async function buildModel(
  topology: Record<string, unknown>,
  weights: readonly Tensorlike[] | "initial",
  order: WeightOrder = (m) => m.weights,
): Promise<tf.LayersModel> {
  let model: tf.LayersModel;
  try {
    model = await tf.models.modelFromJSON(topology as unknown as Parameters<typeof tf.models.modelFromJSON>[0]);
  } catch (err) {
    const msg = (err as Error).message;
    const unknownClass = /Unknown (layer|class|constraint|initializer|regularizer|activation)[^:]*: ?(\w+)/i.exec(msg);
    throw new ModelError(`the worker cannot build the model from its topology: ${msg.split("\n")[0]}`, {
      hint: unknownClass
        ? unknownClassHint(unknownClass[2]!)
        : "send a model built from TF.js layers (tf.sequential / tf.model)",
      details: unknownClass ? { className: unknownClass[2]! } : {},
    });
  }
  if (weights === "initial") return model;
  const vars = order(model);
  if (vars.length !== weights.length) {
    throw new ModelError(`the model has ${vars.length} weights but ${weights.length} were sent`);
  }
  vars.forEach((w, i) => {
    const got = weights[i]!.shape;
    if (w.shape.length !== got.length || w.shape.some((d, j) => d !== got[j])) {
      throw new ModelError(
        `weight ${i} (${w.name}) has shape [${w.shape.join(", ")}] but [${got.join(", ")}] was sent`,
      );
    }
  });
  const tensors = weights.map((w, i) => tf.tensor(w.data, [...w.shape], vars[i]!.dtype));
  vars.forEach((v, i) => v.write(tensors[i]!));
  // The variables keep the data; dropping these leaves each variable the only owner.
  tf.dispose(tensors);
  return model;
}

/** The order weights travel in for a model: model.weights, unless a stage says otherwise. */
export type WeightOrder = (model: tf.LayersModel) => ReadonlyArray<tf.LayersModel["weights"][number]>;

/** A tensor from its wire form, with its dtype. */
export function tensorOf(t: Tensorlike): tf.Tensor {
  return tf.tensor(t.data, [...t.shape], t.data instanceof Int32Array ? "int32" : "float32");
}

type LossFn = (yTrue: tf.Tensor, yPred: tf.Tensor) => tf.Tensor;

/**
 * The per-sample loss exactly as model.fit computes it: compile with the loss name, then take
 * the function TF.js compiled. (Sequential models keep it on their inner functional model.)
 */
export function compiledLoss(model: tf.LayersModel, loss: LossName, optimizer: tf.Optimizer): LossFn {
  const fns = compiledLosses(model, [loss], optimizer);
  if (fns.length !== 1)
    throw new ModelError(`cannot read the compiled loss of this model (${fns.length} loss functions for one output)`);
  return fns[0]!;
}

/** The per-sample loss of each output, as model.fit computes them (one name per output). */
export function compiledLosses(model: tf.LayersModel, losses: readonly LossName[], optimizer: tf.Optimizer): LossFn[] {
  model.compile({ optimizer, loss: losses.length === 1 ? losses[0]! : [...losses] });
  const holder = model as unknown as { lossFunctions?: LossFn[]; model?: { lossFunctions?: LossFn[] } };
  const fns = holder.lossFunctions ?? holder.model?.lossFunctions;
  if (!fns || fns.length !== model.outputs.length || fns.some((f) => typeof f !== "function")) {
    throw new ModelError(
      `cannot read the compiled losses of this model (${fns?.length ?? 0} loss functions for ${model.outputs.length} outputs)`,
    );
  }
  return fns;
}

/** Every weight of the model as flat copies, in model.weights order (read back from a device where it lives on one). */
export async function readWeights(model: tf.LayersModel, order: WeightOrder = (m) => m.weights): Promise<Tensorlike[]> {
  const out: Tensorlike[] = [];
  for (const w of order(model)) {
    const t = w.read();
    const values = await t.data();
    out.push({
      data: t.dtype === "int32" ? Int32Array.from(values as Int32Array) : Float32Array.from(values as Float32Array),
      shape: [...w.shape] as number[],
    });
  }
  return out;
}
