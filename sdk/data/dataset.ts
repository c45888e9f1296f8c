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

/** A batch of samples as they travel: one tensor per model input (xs) and per model output (ys). */
export interface Batch {
  xs: Tensorlike[];
  ys: Tensorlike[];
  /** The first input and target (for most models the only ones). */
  x: Tensorlike;
  y: Tensorlike;
}

/** Which model input and output each column feeds, when the dataset was made from maps by name. */
export interface ColumnNames {
  inputs?: readonly string[];
  outputs?: readonly string[];
}

/**
 * An in-memory dataset of `size` samples: one column per model input and one per output (one of
 * each for most models). Kept as flat typed arrays on the host so the driver can cut batches and
 * send them as binary frames without going through TF.js tensors.
 */
export class Dataset {
  readonly size: number;
  /** The input columns, in the model's input order (or the names' order; see `names`). */
  readonly inputs: readonly Column[];
  /** The target columns, one per model output. */
  readonly targets: readonly Column[];

  /** The bytes its columns hold (a worker that loads the dataset itself holds them all). */
  get bytes(): number {
    return [...this.inputs, ...this.targets].reduce((n, c) => n + c.data.byteLength, 0);
  }

  /** A dataset named `name` from its inputs and targets (same number of samples); `source` if workers can load it themselves. */
  constructor(
    readonly name: string,
    x: Column | readonly Column[],
    y: Column | readonly Column[],
    /** How a worker can rebuild this exact dataset itself; null for data only the driver has. */
    readonly source: DatasetSource | null = null,
    /** The input and output names the columns were given under (datasets.fromTensors with maps). */
    readonly names: ColumnNames = {},
  ) {
    this.inputs = isColumnList(x) ? [...x] : [x];
    this.targets = isColumnList(y) ? [...y] : [y];
    if (this.inputs.length === 0 || this.targets.length === 0)
      throw new DataError(`dataset "${name}" needs at least one input and one target column`);
    const counts = [...this.inputs, ...this.targets].map(sampleCount);
    if (counts.some((n) => n !== counts[0])) {
      const nx = this.inputs.map(sampleCount).join(", ");
      const ny = this.targets.map(sampleCount).join(", ");
      throw new DataError(`dataset "${name}" has ${nx} inputs but ${ny} targets`, {
        hint: "x and y (every tensor of them) must have the same first dimension",
      });
    }
    this.size = counts[0]!;
  }

  /** The first (for most models the only) input column. */
  get x(): Column {
    return this.inputs[0]!;
  }

  /** The first (for most models the only) target column. */
  get y(): Column {
    return this.targets[0]!;
  }

  /**
   * Copies the samples order[start..end) into contiguous tensors, one per column. With `rooms`
   * (arrays kept by the caller, inputs' columns then targets', grown as needed) each tensor is a
   * view of its room, overwritten by the next gather into it.
   */
  gather(order: ArrayLike<number> | null, start: number, end: number, rooms?: Array<TensorData | undefined>): Batch {
    const cols = [...this.inputs, ...this.targets];
    const all = cols.map((c, k) => gatherColumn(c, order, start, end, rooms, k));
    const xs = all.slice(0, this.inputs.length);
    const ys = all.slice(this.inputs.length);
    return { xs, ys, x: xs[0]!, y: ys[0]! };
  }

  /** The first `n` samples (or all, if fewer), as a new dataset sharing no memory with this one. */
  take(n: number): Dataset {
    return this.slice(0, n);
  }

  /** Samples [start, end) as a new dataset. */
  slice(start: number, end = this.size): Dataset {
    const { xs, ys } = this.gather(null, Math.max(0, Math.min(start, this.size)), Math.min(end, this.size));
    return new Dataset(this.name, xs.map(column), ys.map(column), null, this.names);
  }

  /** TF.js tensors of the whole dataset, for model.evaluate / model.predict in the driver (one input and one output; else toTensorLists). */
  toTensors(): { x: tf.Tensor; y: tf.Tensor } {
    if (this.inputs.length !== 1 || this.targets.length !== 1) {
      throw new DataError(
        `dataset "${this.name}" has ${this.inputs.length} input and ${this.targets.length} target columns`,
        { hint: "use toTensorLists() for datasets with several" },
      );
    }
    const { x, y } = this.toTensorLists();
    return { x: x[0]!, y: y[0]! };
  }

  /** TF.js tensors of the whole dataset, one per column, as model.evaluate takes them for several inputs or outputs. */
  toTensorLists(): { x: tf.Tensor[]; y: tf.Tensor[] } {
    const t = (c: Column) => tf.tensor(c.data, [this.size, ...c.sampleShape], c.dtype);
    return { x: this.inputs.map(t), y: this.targets.map(t) };
  }

  /** Its name, size and sample shapes. */
  toString(): string {
    const cols = (cs: readonly Column[]) => cs.map(fmt).join(" + ");
    return `Dataset "${this.name}": ${this.size} samples, x ${cols(this.inputs)}, y ${cols(this.targets)}`;
  }
}

function isColumnList(c: Column | readonly Column[]): c is readonly Column[] {
  return Array.isArray(c);
}

/** A batch's tensors as one step's attachments: the inputs, then the targets. */
export function batchAttachments(b: Batch): Tensorlike[] {
  return [...b.xs, ...b.ys];
}

function fmt(c: Column): string {
  return `[${c.sampleShape.join(", ")}] ${c.dtype}`;
}

function sampleCount(c: Column): number {
  const per = elementCount(c.sampleShape);
  if (per === 0) return 0;
  if (c.data.length % per !== 0) {
    throw new DataError(
      `a column of ${c.data.length} elements is not a whole number of samples of shape [${c.sampleShape.join(", ")}]`,
    );
  }
  return c.data.length / per;
}

function column(t: Tensorlike): Column {
  return { data: t.data, sampleShape: t.shape.slice(1), dtype: dtypeOf(t.data) };
}

function gatherColumn(
  c: Column,
  order: ArrayLike<number> | null,
  start: number,
  end: number,
  rooms: Array<TensorData | undefined> | undefined,
  k: number,
): Tensorlike {
  const per = elementCount(c.sampleShape);
  const n = Math.max(0, end - start);
  if (order === null && !rooms) {
    const data = c.data.slice(start * per, end * per);
    return { data, shape: [n, ...c.sampleShape] };
  }
  const out = rooms ? roomFor(rooms, k, c.dtype, n * per) : allocate(c.dtype, n * per);
  if (order === null) {
    out.set(c.data.subarray(start * per, end * per));
    return { data: out, shape: [n, ...c.sampleShape] };
  }
  for (let i = 0; i < n; i++) {
    const s = order[start + i]!;
    out.set(c.data.subarray(s * per, (s + 1) * per), i * per);
  }
  return { data: out, shape: [n, ...c.sampleShape] };
}

/** The first `length` elements of room `k`, made (or remade larger) where it holds fewer. */
function roomFor(rooms: Array<TensorData | undefined>, k: number, dtype: DType, length: number): TensorData {
  let room = rooms[k];
  if (!room || room.length < length || dtypeOf(room) !== dtype) rooms[k] = room = allocate(dtype, length);
  return room.subarray(0, length);
}
