import type * as tf from "@tensorflow/tfjs";
import { ConfigError } from "../errors/errors";
import { OPTIMIZER_NAMES, OptimizerSpecSchema, type OptimizerInput } from "../protocol/optimizer-spec";
import { estimateReplicaMemory, memoryTotal, type MemoryEstimate } from "./memory";
import { summarizeModel } from "./model-summary";

export interface MemoryEstimateWithTotal extends MemoryEstimate {
  /** The sum of the known categories. */
  totalBytes: number;
}

/**
 * What training `model` whole on one device needs, by category: parameters, gradients,
 * optimizer state (by optimizer) and the activations kept for the backward pass (for batchSize
 * samples). Pure arithmetic on the topology; an estimate, checked against TF.js's own memory
 * accounting in test/unit/memory-estimate.test.ts.
 */
export function estimateMemory(
  model: tf.LayersModel,
  options: { batchSize?: number; optimizer?: OptimizerInput } = {},
): MemoryEstimateWithTotal {
  if (options.batchSize !== undefined && !(Number.isInteger(options.batchSize) && options.batchSize > 0)) {
    throw new ConfigError(`batchSize ${options.batchSize} must be a positive integer`);
  }
  let optimizer;
  if (options.optimizer !== undefined) {
    const parsed = OptimizerSpecSchema.safeParse(
      typeof options.optimizer === "string" ? { name: options.optimizer } : options.optimizer,
    );
    if (!parsed.success)
      throw new ConfigError(`optimizer ${JSON.stringify(options.optimizer)} is not one meshtrain knows`, {
        hint: `use one of ${OPTIMIZER_NAMES.map((n) => `"${n}"`).join(", ")}`,
      });
    optimizer = parsed.data;
  }
  const e = estimateReplicaMemory(summarizeModel(model), { batchSize: options.batchSize, optimizer });
  return { ...e, totalBytes: memoryTotal(e) };
}
