import { z } from "zod";
import { COMPRESSIONS } from "./wire-formats";

/**
 * How a data-parallel replica's gradient travels to the sum (a communication hook, as DDP's):
 * rounded to 16 bits with error feedback, or as PowerSGD's low-rank factors. A load without one
 * sums the gradient whole, in float32. The kind names the worker's hook (roles/data/hooks/hook-table.ts).
 */
export const CommHookSpecSchema = z.union([
  z.strictObject({ kind: z.enum(COMPRESSIONS) }),
  z.strictObject({ kind: z.literal("powersgd"), rank: z.number().int().min(1).max(4096) }),
]);
export type CommHookSpec = z.output<typeof CommHookSpecSchema>;
