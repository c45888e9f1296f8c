import type * as tf from "@tensorflow/tfjs";
import type { ResolvedFitOptions } from "../config/fit-options";
import type { Dataset } from "../data/dataset";
import { DataError, ModelError } from "../errors/errors";

/** The model and the dataset fit each other: checked before anything is sent. */
export function checkShapes(model: tf.LayersModel, dataset: Dataset, o: ResolvedFitOptions): void {
  if (model.inputs.length !== 1 || model.outputs.length !== 1) {
    throw new ModelError(`the model has ${model.inputs.length} inputs and ${model.outputs.length} outputs; meshtrain trains models with one of each`, {
      hint: "wrap several inputs into one tensor, or train this model with model.fit for now",
    });
  }
  if (dataset.size === 0) throw new DataError(`dataset "${dataset.name}" is empty`);
  const want = model.inputs[0]!.shape.slice(1);
  const got = dataset.x.sampleShape;
  if (want.length !== got.length || want.some((d, i) => d !== null && d !== got[i])) {
    throw new DataError(`the model takes inputs of shape [${want.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has samples of shape [${got.join(", ")}]`, {
      hint: "reshape the dataset or change the model's inputShape",
    });
  }
  if (o.loss !== "sparseCategoricalCrossentropy") {
    const wantY = model.outputs[0]!.shape.slice(1);
    const gotY = dataset.y.sampleShape;
    if (wantY.length !== gotY.length || wantY.some((d, i) => d !== null && d !== gotY[i])) {
      throw new DataError(`the model outputs shape [${wantY.map((d) => d ?? "?").join(", ")}] but the targets of "${dataset.name}" have shape [${gotY.join(", ")}]`, {
        hint: "one-hot encode the labels to match the output, or use loss sparseCategoricalCrossentropy",
      });
    }
  }
}
