import * as tf from "@tensorflow/tfjs";
import { DataError } from "../errors/errors";
import { allocate, dtypeOf, elementCount, type DType, type TensorData } from "../protocol/tensor";
import type { Tensorlike } from "../protocol/tensor";
import type { DatasetSource } from "../protocol/dataset-source";

/** One side of a dataset (inputs or targets): all samples back to back in one typed array. */
export interface Column {
  readonly data: TensorData;
  /** Shape of one sample, without the batch dimension. */
  readonly sampleShape: readonly number[];
  readonly dtype: DType;
}

/**
 * An in-memory dataset of `size` samples. Kept as flat typed arrays on the host so the driver
 * can cut batches and send them as binary frames without going through TF.js tensors.
 */
export class Dataset {
  readonly size: number;

  /** A dataset named `name` from its inputs and targets (same number of samples); `source` if workers can load it themselves. */
  constructor(
    readonly name: string,
    readonly x: Column,
    readonly y: Column,
    /** How a worker can rebuild this exact dataset itself; null for data only the driver has. */
    readonly source: DatasetSource | null = null,
  ) {
    const nx = sampleCount(x);
    const ny = sampleCount(y);
    if (nx !== ny) {
      throw new DataError(`dataset "${name}" has ${nx} inputs but ${ny} targets`, {
        hint: "x and y must have the same first dimension",
      });
    }
    this.size = nx;
  }

  /** Copies the samples order[start..end) into contiguous tensors. */
  gather(order: ArrayLike<number> | null, start: number, end: number): { x: Tensorlike; y: Tensorlike } {
    return { x: gatherColumn(this.x, order, start, end), y: gatherColumn(this.y, order, start, end) };
  }

  /** The first `n` samples (or all, if fewer), as a new dataset sharing no memory with this one. */
  take(n: number): Dataset {
    const m = Math.min(n, this.size);
    const { x, y } = this.gather(null, 0, m);
    return new Dataset(this.name, column(x), column(y));
  }

  /** Samples [start, end) as a new dataset. */
  slice(start: number, end = this.size): Dataset {
    const { x, y } = this.gather(null, Math.max(0, start), Math.min(end, this.size));
    return new Dataset(this.name, column(x), column(y));
  }

  /** TF.js tensors of the whole dataset, for model.evaluate / model.predict in the driver. */
  toTensors(): { x: tf.Tensor; y: tf.Tensor } {
    return {
      x: tf.tensor(this.x.data, [this.size, ...this.x.sampleShape], this.x.dtype),
      y: tf.tensor(this.y.data, [this.size, ...this.y.sampleShape], this.y.dtype),
    };
  }

  /** Its name, size and sample shapes. */
  toString(): string {
    return `Dataset "${this.name}": ${this.size} samples, x ${fmt(this.x)}, y ${fmt(this.y)}`;
  }
}

function fmt(c: Column): string {
  return `[${c.sampleShape.join(", ")}] ${c.dtype}`;
}

function sampleCount(c: Column): number {
  const per = elementCount(c.sampleShape);
  if (per === 0) return 0;
  if (c.data.length % per !== 0) {
    throw new DataError(`a column of ${c.data.length} elements is not a whole number of samples of shape [${c.sampleShape.join(", ")}]`);
  }
  return c.data.length / per;
}

function column(t: Tensorlike): Column {
  return { data: t.data, sampleShape: t.shape.slice(1), dtype: dtypeOf(t.data) };
}

function gatherColumn(c: Column, order: ArrayLike<number> | null, start: number, end: number): Tensorlike {
  const per = elementCount(c.sampleShape);
  const n = Math.max(0, end - start);
  if (order === null) {
    const data = c.data.slice(start * per, end * per);
    return { data, shape: [n, ...c.sampleShape] };
  }
  const out = allocate(c.dtype, n * per);
  for (let i = 0; i < n; i++) {
    const s = order[start + i]!;
    out.set(c.data.subarray(s * per, (s + 1) * per), i * per);
  }
  return { data: out, shape: [n, ...c.sampleShape] };
}
