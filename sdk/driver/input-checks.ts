import type * as tf from "@tensorflow/tfjs";
import type { ResolvedFitOptions } from "./fit-options";
import { Dataset, type Column } from "../data/dataset";
import { DataError } from "../errors/errors";
import { hasNonFinite } from "../backends/native/finite";
import { describeGiven } from "../util/describe-value";

/**
 * The dataset's columns in the model's input and output order: as given when the dataset was
 * made from tensors or lists, by name when it was made from maps (names the model does not have
 * are refused, naming them).
 */
export function arrangeColumns(model: tf.LayersModel, dataset: Dataset): Dataset {
  // Plain JavaScript callers (and notebook cells) can pass anything: say what fit takes.
  const given: unknown = dataset;
  if (
    typeof given !== "object" ||
    given === null ||
    !Array.isArray((given as Partial<Dataset>).inputs) ||
    typeof (given as Partial<Dataset>).names !== "object"
  ) {
    throw new DataError(`fit takes a meshtrain Dataset as its second argument, and was given ${describeGiven(given)}`, {
      hint: "make one with datasets.fromTensors(x, y) (tensors, arrays, or maps keyed by the model's input and output names), or use datasets.mnist(), datasets.synthetic() or datasets.linear()",
    });
  }
  const order = (
    given: readonly string[] | undefined,
    names: readonly string[],
    which: "input" | "output",
  ): number[] | null => {
    if (!given) return null;
    const unknown = given.filter((g) => !names.includes(g));
    const missing = names.filter((n) => !given.includes(n));
    if (unknown.length > 0 || missing.length > 0) {
      throw new DataError(
        `dataset "${dataset.name}" maps ${which}s ${given.map((g) => `"${g}"`).join(", ")}, but the model's ${which}s are ${names.map((n) => `"${n}"`).join(", ")}${unknown.length ? ` (no ${which} ${unknown.join(", ")})` : ""}${missing.length ? ` (nothing for ${missing.join(", ")})` : ""}`,
        {
          hint: `key the map by model.${which}Names, or give a list in the model's order`,
        },
      );
    }
    return names.map((n) => given.indexOf(n));
  };
  const xi = order(dataset.names.inputs, model.inputNames, "input");
  const yi = order(dataset.names.outputs, model.outputNames, "output");
  if (!xi && !yi) return dataset;
  const inputs = xi ? xi.map((i) => dataset.inputs[i]!) : dataset.inputs;
  const targets = yi ? yi.map((i) => dataset.targets[i]!) : dataset.targets;
  return new Dataset(dataset.name, inputs, targets, dataset.source);
}

/**
 * The model and the dataset fit each other, checked before anything is sent: one column per
 * input and output, shapes, label encodings against each output's loss, class ids in range,
 * values that are numbers, sizes.
 */
export function checkShapes(
  model: tf.LayersModel,
  dataset: Dataset,
  o: Pick<ResolvedFitOptions, "batchSize" | "loss" | "heads">,
): void {
  if (dataset.inputs.length !== model.inputs.length || dataset.targets.length !== model.outputs.length) {
    throw new DataError(
      `the model takes ${model.inputs.length} input(s) (${model.inputNames.join(", ")}) and has ${model.outputs.length} output(s) (${model.outputNames.join(", ")}), but dataset "${dataset.name}" has ${dataset.inputs.length} input and ${dataset.targets.length} target column(s)`,
      {
        hint: "give datasets.fromTensors one x tensor per model input and one y tensor per output: lists in the model's order, or maps by input and output name",
      },
    );
  }
  if (dataset.size === 0)
    throw new DataError(`dataset "${dataset.name}" is empty`, { hint: "give fit a dataset with at least one sample" });
  if (o.batchSize > dataset.size) {
    throw new DataError(
      `batchSize ${o.batchSize} is larger than dataset "${dataset.name}" (${dataset.size} samples): every step would be the whole dataset, short of the batch asked for`,
      {
        hint: `use batchSize ${dataset.size} or less`,
      },
    );
  }
  const several = model.inputs.length > 1 || model.outputs.length > 1;
  model.inputs.forEach((input, i) => {
    const want = input.shape.slice(1);
    const col = dataset.inputs[i]!;
    const got = col.sampleShape;
    if (want.length !== got.length || want.some((d, j) => d !== null && d !== got[j])) {
      throw new DataError(
        `the model takes ${several ? `input "${model.inputNames[i]}" of` : "inputs of"} shape [${want.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has x${several ? `[${i}]` : ""} samples of shape [${got.join(", ")}] (${col.dtype})`,
        {
          hint: "reshape the dataset or change the model's inputShape",
        },
      );
    }
  });
  model.outputs.forEach((out, k) => {
    const label = several ? `output "${model.outputNames[k]}"` : "";
    checkTargets(out.shape.slice(1), dataset, dataset.targets[k]!, o.heads?.[k]?.loss ?? o.loss, label);
  });
  dataset.inputs.forEach((c, i) => checkFinite(dataset, several ? `x[${i}]` : "x", c));
  dataset.targets.forEach((c, k) => checkFinite(dataset, several ? `y[${k}]` : "y", c));
}

/** Targets against an output and its loss: one-hot for categorical losses, class ids for sparse ones. */
function checkTargets(
  out: ReadonlyArray<number | null>,
  dataset: Dataset,
  y: Column,
  loss: ResolvedFitOptions["loss"],
  label: string,
): void {
  const gotY = y.sampleShape;
  const units = out[out.length - 1] ?? null;
  // One class id per row of the output: per sample for [units] outputs, per position for sequences ([T, units] takes [T] or [T, 1]).
  const rows = out.slice(0, -1);
  const idsShape =
    gotY.length === 0 || (gotY.length === 1 && gotY[0] === 1) || (rows.length > 0 && sameRows(gotY, rows));
  const fmt = `y samples of shape [${gotY.join(", ")}] (${y.dtype})${label ? ` for ${label}` : ""}`;
  if (loss === "sparseCategoricalCrossentropy") {
    if (!idsShape) {
      throw new DataError(
        `loss sparseCategoricalCrossentropy takes one class id per ${rows.length > 0 ? `position ([${rows.map((d) => d ?? "?").join(", ")}] a sample)` : "sample"}, but dataset "${dataset.name}" has ${fmt}: these look one-hot`,
        {
          hint: `use loss "categoricalCrossentropy" for one-hot labels, or give class ids (shape ${rows.length > 0 ? `[n, ${rows.map((d) => d ?? "?").join(", ")}] or [n, ${rows.map((d) => d ?? "?").join(", ")}, 1]` : "[n] or [n, 1]"})`,
        },
      );
    }
    checkClassIds(dataset, y, units);
    return;
  }
  if (out.length !== gotY.length || out.some((d, i) => d !== null && d !== gotY[i])) {
    const sparse = idsShape && units !== null && units > 1 && loss === "categoricalCrossentropy";
    throw new DataError(
      `the model${label ? `'s ${label}` : ""} outputs shape [${out.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has ${fmt}${sparse ? ": these look like class ids, not one-hot" : ""}`,
      {
        hint: sparse
          ? 'use loss "sparseCategoricalCrossentropy" for class ids, or one-hot encode them (tf.oneHot)'
          : "one-hot encode the labels to match the output, or change the model's last layer",
      },
    );
  }
}

/** Whether a target's sample shape is the output's rows, with or without a last axis of 1. */
function sameRows(got: readonly number[], rows: ReadonlyArray<number | null>): boolean {
  const t = got.length === rows.length + 1 && got[got.length - 1] === 1 ? got.slice(0, -1) : got;
  return t.length === rows.length && rows.every((d, i) => d === null || d === t[i]);
}

function checkClassIds(dataset: Dataset, y: Column, units: number | null): void {
  const d = y.data;
  for (let i = 0; i < d.length; i++) {
    const v = d[i]!;
    if (!Number.isInteger(v) || v < 0 || (units !== null && v >= units)) {
      throw new DataError(
        `sample ${i} of dataset "${dataset.name}" has class id ${v}; the model's ${units ?? "?"} outputs take class ids 0 to ${units === null ? "?" : units - 1}`,
        {
          hint: "labels for a sparse loss are whole numbers from 0 to the number of classes - 1 (int32 labels are fine: meshtrain casts them)",
          details: { sample: i },
        },
      );
    }
  }
}

const finiteChecked = new WeakSet<Column>();

/** NaN or Infinity in data held in memory: found here, once per dataset, rather than as a diverged step. */
function checkFinite(dataset: Dataset, which: string, c: Column): void {
  if (finiteChecked.has(c)) return;
  const d = c.data;
  if (hasNonFinite(d)) {
    const i = d.findIndex((v) => !Number.isFinite(v));
    const per = Math.max(
      1,
      c.sampleShape.reduce((a, b) => a * b, 1),
    );
    throw new DataError(
      `sample ${Math.floor(i / per)} of dataset "${dataset.name}" holds ${d[i]} in ${which} (a [${c.sampleShape.join(", ")}] ${c.dtype} sample)`,
      {
        hint: "remove or repair samples holding NaN or Infinity before training (e.g. replace missing values)",
        details: { sample: Math.floor(i / per) },
      },
    );
  }
  finiteChecked.add(c);
}
