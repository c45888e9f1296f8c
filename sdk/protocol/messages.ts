import { z } from "zod";
import { BACKEND_CHOICES } from "./backend-names";
import { EvaluatedSchema, EvaluateSchema } from "./evaluate-messages";
import { id, v } from "./fields";
import { LoadSchema } from "./load-messages";
import {
  ProbedSchema,
  ProbeSchema,
  ProfiledSchema,
  ProfileSchema,
  ReplicaStepSchema,
  RingProbedSchema,
  RingProbeSchema,
} from "./profile-messages";
import {
  AppliedReplySchema,
  AppliedSchema,
  PulledSchema,
  PullSchema,
  PushedSchema,
  PushSchema,
  RegroupedSchema,
  RegroupSchema,
} from "./ps-messages";
import {
  FetchStateSchema,
  SetShardSchema,
  SetStateSchema,
  ShardSetSchema,
  StateSchema,
  StateSetSchema,
} from "./state-messages";
import { StepDoneSchema, StepSchema } from "./step-messages";
import { TensorSpecSchema } from "./tensor";
import { WireErrorSchema } from "./wire-error";
import { WorkerInfoSchema } from "./worker-info";
import { WorkerMemorySchema } from "./worker-memory";
import { NoticeSchema, OutputSchema, ProgressSchema } from "./worker-reports";

// The message groups kept in files of their own, exported from here with the union that joins them.
export {
  LoadPsServerSchema,
  LoadPsWorkerSchema,
  LoadReplicaSchema,
  LoadSchema,
  LoadStageSchema,
  type LoadMessage,
  type LoadOf,
  type RoleName,
} from "./load-messages";
export * from "./ps-messages";
export * from "./state-messages";
export * from "./step-messages";
export * from "./worker-info";

/**
 * Every control message, as one zod discriminated union on `type`. Each carries `v`
 * (PROTOCOL_VERSION). Requests carry `id`; replies carry `re`, the id they answer.
 * A message with `attachments` is followed on the same connection by binary frames holding
 * those tensors (kind "attachment", seq = the message id), in order.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits");
const attachments = z.array(TensorSpecSchema).max(4096);

// Handshake (before authentication, only these three are accepted).
export const ChallengeSchema = z.strictObject({
  type: z.literal("challenge"),
  v,
  nonce: hex64,
  server: z.strictObject({ version: z.string().max(64), pid: z.number().int() }),
});
export const AuthSchema = z.strictObject({
  type: z.literal("auth"),
  v,
  nonce: hex64,
  mac: hex64,
  /** joining: a worker started with --join, authenticating to a driver's join listener. */
  role: z.enum(["driver", "peer", "joining", "relay"]),
  /** Peers say which session and rank they belong to; checked against what the driver configured. */
  peer: z
    .strictObject({
      session: z.string().max(128),
      rank: z.number().int().nonnegative(),
      /** ring: all-reduce neighbours; pipe: adjacent pipeline stages; ps: a worker reaching a parameter server. */
      link: z.enum(["ring", "pipe", "ps"]),
    })
    .optional(),
});
export const WelcomeSchema = z.strictObject({ type: z.literal("welcome"), v, mac: hex64 });

export const ErrorMessageSchema = z.strictObject({
  type: z.literal("error"),
  v,
  re: id.optional(),
  error: WireErrorSchema,
});

// Driver -> worker requests and their replies.
export const JoinSchema = z.strictObject({
  type: z.literal("join"),
  v,
  id,
  session: z.string().min(1).max(128),
  backend: z.enum(BACKEND_CHOICES),
  /** Cores this worker may use for compute; 0 means all of its machine's. */
  threads: z.number().int().nonnegative().max(1024),
  /** A memory limit the worker must enforce (refusing models that would exceed it), in bytes. */
  memoryCapBytes: z.number().int().positive().optional(),
  /** How often the worker pings the driver and its ring neighbours. */
  heartbeatIntervalMs: z.number().int().positive(),
  /** Silence from the driver or a neighbour longer than this ends the session on the worker. */
  heartbeatTimeoutMs: z.number().int().positive(),
  /** Between fits (no model loaded), the driver's silence ends the session only past this. */
  heartbeatIdleTimeoutMs: z.number().int().positive(),
});
export const JoinedSchema = z.strictObject({
  type: z.literal("joined"),
  v,
  re: id,
  info: WorkerInfoSchema,
  /** The worker's wall clock when it replied, for the driver's estimate of the clock offset. */
  clock: z.number().finite(),
});

export const ConfigureSchema = z.strictObject({
  type: z.literal("configure"),
  v,
  id,
  rank: z.number().int().nonnegative(),
  worldSize: z.number().int().positive().max(4096),
  /**
   * The all-reduce group this worker belongs to, in ring order (every rank for data parallelism,
   * the replicas of its stage for hybrid); it dials the member before it and accepts the one after.
   */
  ring: z.array(z.number().int().nonnegative()).max(4096),
  /** Pipeline neighbours: it dials `prev` (the stage before) and accepts `next` (the stage after). */
  pipe: z
    .strictObject({ prev: z.number().int().nonnegative().nullable(), next: z.number().int().nonnegative().nullable() })
    .optional(),
  /** Address of every rank, as the driver reached it. */
  addresses: z.array(z.string().max(512)).max(4096),
  /** Strategy "ps": the parameter servers this worker dials, in server order. */
  servers: z.array(z.string().max(512)).max(1024).optional(),
  /** Elastic training: the membership this wiring belongs to; steps of an earlier one are dropped. */
  generation: z.number().int().nonnegative().optional(),
  /** PEM certificate(s) to trust when dialling other workers over wss:// (public, not a secret). */
  ca: z
    .string()
    .max(256 * 1024)
    .optional(),
  chunkElements: z.number().int().positive(),
  /** Where the all-reduce's bytes travel: the native data plane (TCP) or the WebSocket ring links. Default "websocket". */
  dataPlane: z.enum(["native", "websocket"]).optional(),
  connectTimeoutMs: z.number().int().positive(),
  stepTimeoutMs: z.number().int().positive(),
});
/**
 * On a ring link between two workers, once, before its heartbeats (configure with dataPlane
 * "native"): the port this worker's native data plane listens on for the position after it.
 */
export const DataPortSchema = z.strictObject({
  type: z.literal("dataPort"),
  v,
  port: z.number().int().min(1).max(65535),
});
export const ConfiguredSchema = z.strictObject({ type: z.literal("configured"), v, re: id });

export const LoadedSchema = z.strictObject({
  type: z.literal("loaded"),
  v,
  re: id,
  /** Samples in the dataset the worker loaded itself (feed "workers"). */
  datasetSize: z.number().int().nonnegative().optional(),
  /** The bytes that dataset holds (its memory report names them beside the training state). */
  dataBytes: z.number().int().nonnegative().optional(),
  paramCount: z.number().int().nonnegative(),
  /** Elements in the flat gradient buffer that is all-reduced each step. */
  gradientLength: z.number().int().nonnegative(),
  /** How a replica computes its gradient: the native step, or autodiff and why. */
  replicaStep: ReplicaStepSchema.optional(),
  /** Loaded with weights "parts" (ZeRO-3): the [from, to) ranges of the flat trainable weights it holds, whose values "setShard" brings. */
  shardRanges: z
    .array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]))
    .max(65536)
    .optional(),
});

export const FetchWeightsSchema = z.strictObject({ type: z.literal("fetchWeights"), v, id });
export const WeightsSchema = z.strictObject({
  type: z.literal("weights"),
  v,
  re: id,
  /** A parameter server's version: updates it has applied. */
  version: z.number().int().nonnegative().optional(),
  /** SHA-256 of every weight's bytes, in order: equal digests mean identical replicas. */
  digest: hex64,
  attachments,
});
export const DigestSchema = z.strictObject({ type: z.literal("digest"), v, id });
export const DigestReplySchema = z.strictObject({ type: z.literal("digestReply"), v, re: id, digest: hex64 });

/**
 * Elastic data parallelism: go back to `to` updates applied (or just report, without `to`). Local
 * SGD counts steps taken, and `sync: "last"` goes back to the last sync (its steps since re-run).
 */
export const RewindSchema = z.strictObject({
  type: z.literal("rewind"),
  v,
  id,
  to: z.number().int().nonnegative().optional(),
  sync: z.literal("last").optional(),
});
export const RewoundSchema = z.strictObject({
  type: z.literal("rewound"),
  v,
  re: id,
  applied: z.number().int().nonnegative(),
});

export const ReleaseSchema = z.strictObject({ type: z.literal("release"), v, id });
/** The fit is over on this worker: what it measured of its memory during the fit, where it had a model loaded. */
export const ReleasedSchema = z.strictObject({
  type: z.literal("released"),
  v,
  re: id,
  memory: WorkerMemorySchema.optional(),
});
export const ShutdownSchema = z.strictObject({ type: z.literal("shutdown"), v });

export const MessageSchema = z.discriminatedUnion("type", [
  ChallengeSchema,
  AuthSchema,
  WelcomeSchema,
  ErrorMessageSchema,
  JoinSchema,
  JoinedSchema,
  ConfigureSchema,
  ConfiguredSchema,
  LoadSchema,
  LoadedSchema,
  StepSchema,
  StepDoneSchema,
  FetchWeightsSchema,
  WeightsSchema,
  DigestSchema,
  DigestReplySchema,
  ProbeSchema,
  ProbedSchema,
  FetchStateSchema,
  StateSchema,
  SetStateSchema,
  StateSetSchema,
  SetShardSchema,
  ShardSetSchema,
  RewindSchema,
  RewoundSchema,
  PullSchema,
  PulledSchema,
  PushSchema,
  PushedSchema,
  AppliedSchema,
  AppliedReplySchema,
  RegroupSchema,
  RegroupedSchema,
  ReleaseSchema,
  ReleasedSchema,
  ShutdownSchema,
  NoticeSchema,
  OutputSchema,
  ProgressSchema,
  ProfileSchema,
  ProfiledSchema,
  RingProbeSchema,
  RingProbedSchema,
  EvaluateSchema,
  EvaluatedSchema,
]);

export type Message = z.infer<typeof MessageSchema>;
export type MessageType = Message["type"];
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;
/** A message as written by the sender: `v` is filled in by the channel. */
export type Outgoing<T extends MessageType = MessageType> = T extends MessageType ? Omit<MessageOf<T>, "v"> : never;
export type Request = Extract<Message, { id: number }>;
export type Reply = Extract<Message, { re: number }>;
