import type { FlatRanges } from "../model/flat-state";

/**
 * An optimizer's state, for checkpoints: named float32 tensors (its slots) and scalars (step
 * counters). `format` says which implementation wrote it; each reads only its own. With
 * `ranges` it is laid flat (model/flat-state.ts): a sharded replica's slots over its ranges of
 * the flat parameters.
 */
export interface OptimizerState {
  format: "native" | "tfjs";
  tensors: Array<{ name: string; data: Float32Array; shape: number[] }>;
  scalars: Record<string, number>;
  ranges?: FlatRanges;
}
