import { z } from "zod";

/**
 * Who starts the workers that join (join()'s workers): nobody (the user starts them), the
 * job itself (fromEnv()), ssh or Slurm. Each is stopped when the cluster closes.
 */
export const LauncherSpecSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    /** fromEnv(): the same script runs on every node; rank 0 drives and starts its own worker, the others join it. */
    kind: z.literal("spmd"),
    rank: z.number().int().min(0).max(1023),
    /** The environment variables the rank came from, for messages. */
    source: z.string().min(1).max(200),
  }),
]);

export type LauncherSpec = z.infer<typeof LauncherSpecSchema>;
