import type * as tf from "@tensorflow/tfjs";
import { DataError } from "../errors/errors";
import { Dataset, type Column } from "./dataset";

/** A dataset from two TF.js tensors whose first dimension is the sample. Copies the data once. */
export function fromTensors(x: tf.Tensor, y: tf.Tensor, name = "tensors"): Dataset {
  return new Dataset(name, toColumn(x, "x"), toColumn(y, "y"));
}

function toColumn(t: tf.Tensor, which: string): Column {
  if (t.rank < 1) {
    throw new DataError(`${which} is a scalar; datasets need a first (sample) dimension`, {
      hint: `reshape ${which} to [samples, ...]`,
    });
  }
  if (t.dtype !== "float32" && t.dtype !== "int32") {
    throw new DataError(`${which} has dtype ${t.dtype}; meshtrain sends float32 and int32 tensors`, {
      hint: `cast it first: ${which}.toFloat() or ${which}.cast("int32")`,
    });
  }
  const data = t.dtype === "float32" ? Float32Array.from(t.dataSync() as Float32Array) : Int32Array.from(t.dataSync() as Int32Array);
  return { data, sampleShape: t.shape.slice(1), dtype: t.dtype };
}
