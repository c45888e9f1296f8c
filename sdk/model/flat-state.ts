import { CheckpointError } from "../errors/errors";

/**
 * An optimizer's state laid flat over the model's parameters, so that a checkpoint written by
 * N replicas (each holding its shard) loads on M, or on another strategy of data parallelism.
 * Every optimizer the workers have is elementwise: its state is some slots of one value per
 * parameter (Adam's m and v) and a few counters. Laid flat, slot j over a holder's ranges of
 * the flat parameters is one array, whatever tensors the implementation kept it in.
 */

/** A tensor of an optimizer's state, as exportState lists it. */
export interface StateTensor {
  name: string;
  data: Float32Array;
  shape: number[];
}

/** An optimizer's state as an implementation exports it (roles' OptimizerState). */
export interface ListedState {
  format: "native" | "tfjs";
  tensors: StateTensor[];
  scalars: Record<string, number>;
}

/** [from, to) ranges of the flat parameters, in the order a holder lays their values out. */
export type FlatRanges = Array<[number, number]>;

export interface FlatState {
  format: "native" | "tfjs";
  ranges: FlatRanges;
  /** Each slot's values over `ranges`, in order. */
  slots: Float32Array[];
  /** Counters TF.js keeps as tensors of shape [] (its iterations), first in its list. */
  head: Array<{ name: string; value: number }>;
  scalars: Record<string, number>;
}

/**
 * How an implementation lists its slots: one tensor per piece (a variable, or a part of one)
 * and slot, piece by piece (meshtrain's native optimizer, TF.js's Adamax as exported here, any
 * single piece) or slot by slot (TF.js's other optimizers: all m, then all v).
 */
export interface Pieces {
  shapes: number[][];
  pieceMajor: boolean;
}

const count = (shape: readonly number[]): number => shape.reduce((a, d) => a * d, 1);

export function rangesLength(ranges: FlatRanges): number {
  return ranges.reduce((a, [from, to]) => a + to - from, 0);
}

/** The pieces of a replica holding every trainable variable whole, as `format` and `optimizer` list them. */
export function wholePieces(format: "native" | "tfjs", optimizer: string, shapes: number[][]): Pieces {
  return { shapes, pieceMajor: format === "native" || optimizer === "adamax" };
}

/** `state`, listed as `pieces`, laid flat over `ranges`. */
export function flatten(state: ListedState, ranges: FlatRanges, pieces: Pieces): FlatState {
  const head = state.tensors.filter((t) => t.shape.length === 0);
  const rest = state.tensors.filter((t) => t.shape.length > 0);
  const p = pieces.shapes.length;
  const k = p === 0 ? 0 : rest.length / p;
  const length = rangesLength(ranges);
  if (!Number.isInteger(k))
    throw new CheckpointError(`an optimizer state of ${rest.length} tensors does not divide among ${p} pieces`);
  const slots = Array.from({ length: k }, (_, j) => {
    const out = new Float32Array(length);
    let off = 0;
    for (let i = 0; i < p; i++) {
      const t = rest[pieces.pieceMajor ? i * k + j : j * p + i]!;
      if (t.data.length !== count(pieces.shapes[i]!))
        throw new CheckpointError(
          `optimizer state tensor ${t.name} has ${t.data.length} values; its piece has ${count(pieces.shapes[i]!)}`,
        );
      out.set(t.data, off);
      off += t.data.length;
    }
    if (off !== length) throw new CheckpointError(`the optimizer state covers ${off} parameters; its ranges ${length}`);
    return out;
  });
  return {
    format: state.format,
    ranges,
    slots,
    head: head.map((t) => ({ name: t.name, value: t.data[0]! })),
    scalars: { ...state.scalars },
  };
}

/** The flat state listed as an implementation holding `pieces` takes it back. */
export function unflatten(flat: FlatState, pieces: Pieces): ListedState {
  const p = pieces.shapes.length;
  const k = flat.slots.length;
  const rest: StateTensor[] = new Array<StateTensor>(p * k);
  for (let j = 0; j < k; j++) {
    let off = 0;
    for (let i = 0; i < p; i++) {
      const shape = pieces.shapes[i]!;
      const n = count(shape);
      rest[pieces.pieceMajor ? i * k + j : j * p + i] = {
        name: `${i}/${j}`,
        data: flat.slots[j]!.slice(off, off + n),
        shape: [...shape],
      };
      off += n;
    }
  }
  return { format: flat.format, tensors: [...headTensors(flat), ...rest], scalars: { ...flat.scalars } };
}

/**
 * Copies into `dst` (laid out over `dstRanges`) the values of `src` (over `srcRanges`) that
 * fall in both; returns how many it copied.
 */
export function copyOverlap(
  src: Float32Array,
  srcRanges: FlatRanges,
  dst: Float32Array,
  dstRanges: FlatRanges,
): number {
  let copied = 0;
  let s = 0;
  for (const [sf, st] of srcRanges) {
    let d = 0;
    for (const [df, dt] of dstRanges) {
      const from = Math.max(sf, df);
      const to = Math.min(st, dt);
      if (to > from) {
        dst.set(src.subarray(s + from - sf, s + to - sf), d + from - df);
        copied += to - from;
      }
      d += dt - df;
    }
    s += st - sf;
  }
  return copied;
}

/** The flat state on the wire: its head's tensors, then one tensor per slot (ranges travel beside them). */
export function listFlat(flat: FlatState): ListedState & { ranges: FlatRanges } {
  const length = rangesLength(flat.ranges);
  return {
    format: flat.format,
    ranges: flat.ranges,
    tensors: [...headTensors(flat), ...flat.slots.map((s, j) => ({ name: `slot ${j}`, data: s, shape: [length] }))],
    scalars: flat.scalars,
  };
}

/** The counters TF.js keeps as tensors of shape [], first in its list. */
function headTensors(flat: FlatState): StateTensor[] {
  return flat.head.map((h) => ({ name: h.name, data: Float32Array.of(h.value), shape: [] }));
}

/** What listFlat listed, flat again. */
export function readFlat(state: ListedState & { ranges: FlatRanges }): FlatState {
  return flatten(state, state.ranges, { shapes: [[rangesLength(state.ranges)]], pieceMajor: true });
}
