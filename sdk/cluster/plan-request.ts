import { z } from "zod";
import { OptimizerSpecSchema, type OptimizerInput } from "../protocol/optimizer-spec";
import { LOSS_NAMES, type LossName } from "../protocol/loss-names";
import { parseOrThrow } from "../config/zod-problem";
import type { PlanOptions } from "../plan/plans";

/** What a user may ask plan() for: the batch to split, the optimizer whose state to count, the loss (strategy "auto" asks whether meshtrain's native step computes it; fit() plans with its own). */
export interface PlanRequest {
  batchSize?: number;
  optimizer?: OptimizerInput;
  loss?: LossName;
}

const Schema = z.strictObject({
  batchSize: z.number().int().positive().optional(),
  optimizer: z.preprocess((v) => (typeof v === "string" ? { name: v } : v), OptimizerSpecSchema).optional(),
  loss: z.enum(LOSS_NAMES).optional(),
});

export function planOptions(request: PlanRequest): PlanOptions {
  const o = parseOrThrow(Schema, request, "plan options");
  return {
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    ...(o.optimizer ? { optimizer: o.optimizer } : {}),
    ...(o.loss ? { loss: o.loss } : {}),
  };
}
