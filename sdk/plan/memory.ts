import type { OptimizerSpec } from "../spec/optimizer";
import type { ModelSummary } from "./model-summary";

/** Bytes a replica needs, by category. Float32 everywhere. An estimate, and labelled as one. */
export interface MemoryEstimate {
  paramsBytes: number;
  gradientBytes: number;
  /** Optimizer slots per trainable parameter: sgd 0, momentum 1, adam 2, rmsprop 2 (3 centered). */
  optimizerBytes: number | null;
  /** Layer outputs kept for the backward pass, for the batch given. */
  activationBytes: number | null;
}

export function optimizerSlots(spec: OptimizerSpec): number {
  switch (spec.name) {
    case "sgd":
      return 0;
    case "momentum":
      return 1;
    case "adam":
      return 2;
    case "rmsprop":
      return spec.centered ? 3 : 2;
  }
}

/** Elements of every layer's output for one sample (what autograd keeps for the backward pass). */
export function activationElementsPerSample(model: ModelSummary): number {
  return model.layers.reduce((n, l) => n + l.outputShape.slice(1).reduce<number>((a, d) => a * (d ?? 1), 1), 0);
}

export function estimateReplicaMemory(model: ModelSummary, o: { batchSize?: number; optimizer?: OptimizerSpec }): MemoryEstimate {
  return {
    paramsBytes: model.paramCount * 4,
    gradientBytes: model.trainableParamCount * 4,
    optimizerBytes: o.optimizer ? model.trainableParamCount * 4 * optimizerSlots(o.optimizer) : null,
    activationBytes: o.batchSize !== undefined ? activationElementsPerSample(model) * 4 * o.batchSize : null,
  };
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v >= 100 || u === 0 ? 0 : 1)} ${units[u]}`;
}
