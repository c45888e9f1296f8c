import type * as tf from "@tensorflow/tfjs";
import type { ResolvedFitOptions } from "./fit-options";
import type { Column, Dataset } from "../data/dataset";
import { DataError, ModelError } from "../errors/errors";
import { hasNonFinite } from "../backends/native/finite";

/**
 * The model and the dataset fit each other, checked before anything is sent: shapes, label
 * encodings against the loss, class ids in range, values that are numbers, sizes.
 */
export function checkShapes(model: tf.LayersModel, dataset: Dataset, o: ResolvedFitOptions): void {
  if (model.inputs.length !== 1 || model.outputs.length !== 1) {
    throw new ModelError(`the model has ${model.inputs.length} inputs and ${model.outputs.length} outputs; meshtrain trains models with one of each`, {
      hint: "concatenate several inputs into one tensor (and split it in the model), or train this model with model.fit",
    });
  }
  if (dataset.size === 0) throw new DataError(`dataset "${dataset.name}" is empty`, { hint: "give fit a dataset with at least one sample" });
  if (o.batchSize > dataset.size) {
    throw new DataError(`batchSize ${o.batchSize} is larger than dataset "${dataset.name}" (${dataset.size} samples): every step would be the whole dataset, short of the batch asked for`, {
      hint: `use batchSize ${dataset.size} or less`,
    });
  }
  const want = model.inputs[0]!.shape.slice(1);
  const got = dataset.x.sampleShape;
  if (want.length !== got.length || want.some((d, i) => d !== null && d !== got[i])) {
    throw new DataError(`the model takes inputs of shape [${want.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has x samples of shape [${got.join(", ")}] (${dataset.x.dtype})`, {
      hint: "reshape the dataset or change the model's inputShape",
    });
  }
  checkTargets(model.outputs[0]!.shape.slice(1), dataset, o.loss);
  checkFinite(dataset, "x", dataset.x);
  checkFinite(dataset, "y", dataset.y);
}

/** Targets against the model's output and the loss: one-hot for categorical losses, class ids for sparse ones. */
function checkTargets(out: ReadonlyArray<number | null>, dataset: Dataset, loss: ResolvedFitOptions["loss"]): void {
  const y = dataset.y;
  const gotY = y.sampleShape;
  const units = out[out.length - 1] ?? null;
  const idsShape = gotY.length === 0 || (gotY.length === 1 && gotY[0] === 1);
  const fmt = `y samples of shape [${gotY.join(", ")}] (${y.dtype})`;
  if (loss === "sparseCategoricalCrossentropy") {
    if (!idsShape) {
      throw new DataError(`loss sparseCategoricalCrossentropy takes one class id per sample, but dataset "${dataset.name}" has ${fmt}: these look one-hot`, {
        hint: 'use loss "categoricalCrossentropy" for one-hot labels, or give class ids (shape [n] or [n, 1])',
      });
    }
    checkClassIds(dataset, units);
    return;
  }
  if (out.length !== gotY.length || out.some((d, i) => d !== null && d !== gotY[i])) {
    const sparse = idsShape && units !== null && units > 1 && loss === "categoricalCrossentropy";
    throw new DataError(`the model outputs shape [${out.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has ${fmt}${sparse ? ": these look like class ids, not one-hot" : ""}`, {
      hint: sparse ? 'use loss "sparseCategoricalCrossentropy" for class ids, or one-hot encode them (tf.oneHot)' : "one-hot encode the labels to match the output, or change the model's last layer",
    });
  }
}

function checkClassIds(dataset: Dataset, units: number | null): void {
  const d = dataset.y.data;
  for (let i = 0; i < d.length; i++) {
    const v = d[i]!;
    if (!Number.isInteger(v) || v < 0 || (units !== null && v >= units)) {
      throw new DataError(`sample ${i} of dataset "${dataset.name}" has class id ${v}; the model's ${units ?? "?"} outputs take class ids 0 to ${units === null ? "?" : units - 1}`, {
        hint: "labels for a sparse loss are whole numbers from 0 to the number of classes - 1 (int32 labels are fine: meshtrain casts them)",
        details: { sample: i },
      });
    }
  }
}

const finiteChecked = new WeakSet<Column>();

/** NaN or Infinity in data held in memory: found here, once per dataset, rather than as a diverged step. */
function checkFinite(dataset: Dataset, which: "x" | "y", c: Column): void {
  if (finiteChecked.has(c)) return;
  const d = c.data;
  if (hasNonFinite(d)) {
    const i = d.findIndex((v) => !Number.isFinite(v));
    const per = Math.max(1, c.sampleShape.reduce((a, b) => a * b, 1));
    throw new DataError(`sample ${Math.floor(i / per)} of dataset "${dataset.name}" holds ${d[i]} in ${which} (a [${c.sampleShape.join(", ")}] ${c.dtype} sample)`, {
      hint: "remove or repair samples holding NaN or Infinity before training (e.g. replace missing values)",
      details: { sample: Math.floor(i / per) },
    });
  }
  finiteChecked.add(c);
}
