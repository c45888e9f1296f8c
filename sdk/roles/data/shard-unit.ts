import type * as tf from "@tensorflow/tfjs";
import type { ShardPart } from "./optimizer-shard";

/** A bucket of consecutive layers' trainable variables, whose collectives run as one (ZeRO-2 and -3). */
export interface Unit {
  /** The native step's ops that hold them, in layer order. */
  ops: number[];
  /** Its first and last layer, indices among the layers with weights (as the step's records name them). */
  layers: { layer: number; last?: number };
  /** [from, from + length) of the flat parameters. */
  from: number;
  length: number;
  /** Each variable, and where it starts in the unit's part of the flat parameters. */
  vars: Array<{ v: tf.Variable; at: number }>;
  /** This replica's part of the unit: [start, end) of it, kept from `kept` in the replica's shard. */
  start: number;
  end: number;
  kept: number;
  /** Where that part lies in the variables. */
  parts: ShardPart[];
}

/** What a unit's collectives are recorded as. */
export function named(
  kind: "all-gather" | "reduce-scatter",
  u: Unit,
): { kind: "all-gather" | "reduce-scatter"; layer: number; last?: number } {
  return { kind, ...u.layers };
}

/** `memory` where it holds `values` floats (a communication thread may hand back a smaller buffer), else a new buffer that does. */
export function room(memory: ArrayBuffer, values: number): ArrayBuffer {
  return memory.byteLength >= values * 4 ? memory : new ArrayBuffer(values * 4);
}
