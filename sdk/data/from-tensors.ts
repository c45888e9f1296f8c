import type * as tf from "@tensorflow/tfjs";
import { DataError } from "../errors/errors";
import { Dataset, type Column } from "./dataset";

/** What model.fit takes for x or y: a tensor, one tensor per model input (or output) in order, or a map from input (or output) name to tensor. */
export type TensorsInput = tf.Tensor | readonly tf.Tensor[] | Readonly<Record<string, tf.Tensor>>;

/**
 * A dataset from TF.js tensors whose first dimension is the sample, as model.fit takes x and y:
 * a tensor each, lists (one per model input and output) or maps by input and output name (fit
 * puts them in the model's order). Copies the data once.
 */
export function fromTensors(x: TensorsInput, y: TensorsInput, name = "tensors"): Dataset {
  const xs = columns(x, "x");
  const ys = columns(y, "y");
  return new Dataset(name, xs.columns, ys.columns, null, {
    ...(xs.names ? { inputs: xs.names } : {}),
    ...(ys.names ? { outputs: ys.names } : {}),
  });
}

/** Whether `v` is x or y as model.fit takes it: a tensor, a list of tensors, or a map from name to tensor. */
export function isTensorsInput(v: unknown): v is TensorsInput {
  if (isTensor(v)) return true;
  if (Array.isArray(v)) return v.length > 0 && v.every(isTensor);
  return typeof v === "object" && v !== null && Object.values(v).length > 0 && Object.values(v).every(isTensor);
}

function isTensor(t: unknown): t is tf.Tensor {
  return (
    typeof t === "object" &&
    t !== null &&
    typeof (t as tf.Tensor).dataSync === "function" &&
    Array.isArray((t as tf.Tensor).shape)
  );
}

function columns(given: TensorsInput, which: "x" | "y"): { columns: Column[]; names?: string[] } {
  if (isTensor(given)) return { columns: [toColumn(given, which)] };
  if (Array.isArray(given)) {
    const list = given as readonly unknown[];
    if (list.length === 0)
      throw new DataError(`${which} is an empty list`, {
        hint: `give ${which} as a tensor, a list of tensors (one per model ${which === "x" ? "input" : "output"}) or a map by name`,
      });
    return {
      columns: list.map((t, i) => (isTensor(t) ? toColumn(t, `${which}[${i}]`) : notTensor(`${which}[${i}]`, t))),
    };
  }
  if (typeof given === "object" && given !== null) {
    const entries = Object.entries(given as Record<string, unknown>);
    if (entries.length === 0)
      throw new DataError(`${which} is an empty map`, {
        hint: `map each model ${which === "x" ? "input" : "output"} name to its tensor`,
      });
    return {
      columns: entries.map(([k, t]) =>
        isTensor(t) ? toColumn(t, `${which}["${k}"]`) : notTensor(`${which}["${k}"]`, t),
      ),
      names: entries.map(([k]) => k),
    };
  }
  return notTensor(which, given);
}

function notTensor(which: string, v: unknown): never {
  throw new DataError(`${which} is ${v === null ? "null" : typeof v}, not a TF.js tensor`, {
    hint: "pass tf.Tensor objects (tf.tensor2d(...), tf.oneHot(...))",
  });
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
  const data =
    t.dtype === "float32"
      ? Float32Array.from(t.dataSync() as Float32Array)
      : Int32Array.from(t.dataSync() as Int32Array);
  return { data, sampleShape: t.shape.slice(1), dtype: t.dtype };
}
