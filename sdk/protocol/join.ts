import { z } from "zod";
import { PROTOCOL_VERSION } from "./version";
import { WireErrorSchema } from "./wire-error";

/**
 * The join exchange: a worker started with `meshtrain worker --join <driver>` connects out to the
 * driver's join listener, both prove the token (the usual handshake, role "joining"), the worker
 * says who it is and where it listens, and once every expected worker is in, the driver gives
 * each its rank. The connection then stays open as the worker's lifeline: when it closes (the
 * driver closed the cluster or died), the worker exits.
 */

const v = z.literal(PROTOCOL_VERSION);

/** Where a worker's rank came from, e.g. "SLURM_PROCID" or "--rank". */
export const RankClaimSchema = z.strictObject({
  rank: z.number().int().nonnegative().max(1_000_000),
  worldSize: z.number().int().positive().max(1_000_000).optional(),
  source: z.string().max(64),
});
export type RankClaim = z.infer<typeof RankClaimSchema>;

export const JoinHelloSchema = z.strictObject({
  type: z.literal("hello"),
  v,
  /** meshtrain's package version on the worker: driver and workers must run the same. */
  version: z.string().max(64),
  /** Where the worker listens for the driver and its peers (a browser tab: its address at the driver's relay). */
  url: z
    .string()
    .regex(/^wss?:\/\/[^\s/]+:\d+(\/relay\/[A-Za-z0-9_-]{16,64})?$/)
    .max(300),
  pid: z.number().int(),
  hostname: z.string().max(256),
  node: z.string().max(64),
  cpus: z.number().int().nonnegative(),
  memoryBytes: z.number().nonnegative(),
  claim: RankClaimSchema.nullable(),
});
export type JoinHello = z.infer<typeof JoinHelloSchema>;

export const JoinAssignedSchema = z.strictObject({
  type: z.literal("assigned"),
  v,
  rank: z.number().int().nonnegative(),
  worldSize: z.number().int().positive(),
});
export type JoinAssigned = z.infer<typeof JoinAssignedSchema>;

export const JoinErrorSchema = z.strictObject({ type: z.literal("error"), v, error: WireErrorSchema });

export const JoinMessageSchema = z.discriminatedUnion("type", [JoinHelloSchema, JoinAssignedSchema, JoinErrorSchema]);
export type JoinMessage = z.infer<typeof JoinMessageSchema>;
