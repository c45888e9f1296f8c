/**
 * An optimizer's state, for checkpoints: named float32 tensors (its slots) and scalars (step
 * counters). `format` says which implementation wrote it; each reads only its own.
 */
export interface OptimizerState {
  format: "native" | "tfjs";
  tensors: Array<{ name: string; data: Float32Array; shape: number[] }>;
  scalars: Record<string, number>;
}
