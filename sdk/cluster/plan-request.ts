import { z } from "zod";
import { OptimizerSpecSchema, type OptimizerInput } from "../protocol/optimizer-spec";
import { parseOrThrow } from "../config/zod-problem";
import type { PlanOptions } from "../plan/plans";

/** What a user may ask plan() for: the batch to split, the optimizer whose state to count. */
export interface PlanRequest {
  batchSize?: number;
  optimizer?: OptimizerInput;
}

const Schema = z.strictObject({
  batchSize: z.number().int().positive().optional(),
  optimizer: z.preprocess((v) => (typeof v === "string" ? { name: v } : v), OptimizerSpecSchema).optional(),
});

export function planOptions(request: PlanRequest): PlanOptions {
  const o = parseOrThrow(Schema, request, "plan options");
  return { ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}), ...(o.optimizer ? { optimizer: o.optimizer } : {}) };
}
