import type * as tf from "@tensorflow/tfjs";
import type { Tensorlike } from "../../protocol/tensor";
import type { StagePlan } from "../../plan/plans";

type LayerVariable = tf.LayersModel["weights"][number];

/**
 * A stage's weights in the order its own model lists them: the trainable weights of its layers,
 * then their non-trainable ones (BatchNormalization's moving statistics), as TF.js orders any
 * model's `weights`. The whole model orders them the same way over all its layers, so a stage's
 * are not one contiguous run of the model's.
 */
export function stageVariables(model: tf.LayersModel, st: Pick<StagePlan, "from" | "to">): LayerVariable[] {
  // Stages number layers as plans do: a functional model's InputLayers hold nothing and are not counted.
  const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer").slice(st.from, st.to);
  return [...layers.flatMap((l) => l.trainableWeights), ...layers.flatMap((l) => l.nonTrainableWeights)];
}

/** The stages' weights (each in its stage's order) put back in the whole model's order. */
export function modelOrder(
  model: tf.LayersModel,
  stages: ReadonlyArray<Pick<StagePlan, "from" | "to">>,
  perStage: readonly Tensorlike[][],
): Tensorlike[] {
  const index = new Map(model.weights.map((w, i) => [w, i]));
  const out: Tensorlike[] = new Array<Tensorlike>(model.weights.length);
  stages.forEach((st, s) => stageVariables(model, st).forEach((v, k) => (out[index.get(v)!] = perStage[s]![k]!)));
  return out;
}
