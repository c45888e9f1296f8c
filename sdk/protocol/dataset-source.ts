import { z } from "zod";

/**
 * How to rebuild a dataset anywhere: what a worker loads itself when it reads its own shard
 * (feed: "workers"). Only datasets every process can make identically have one.
 */
export const DatasetSourceSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("mnist"),
    split: z.enum(["train", "test", "all"]),
    limit: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({
    kind: z.literal("synthetic"),
    inputShape: z.array(z.number().int().positive()).min(1).max(6),
    classes: z.number().int().min(2).max(100_000),
    size: z.number().int().positive().max(100_000_000),
    seed: z.number().int(),
  }),
  z.strictObject({
    kind: z.literal("linear"),
    size: z.number().int().positive().max(100_000_000),
    slope: z.number().finite(),
    intercept: z.number().finite(),
    noise: z.number().nonnegative(),
    seed: z.number().int(),
  }),
]);
/** How a worker rebuilds a dataset itself (feed "workers"): MNIST, synthetic or linear data, by their options. */
export type DatasetSource = z.infer<typeof DatasetSourceSchema>;
