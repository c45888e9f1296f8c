import { z } from "zod";
import { SlowStepSchema } from "./slow-step";
import { BACKEND_CHOICES } from "./backend-names";
import { COMPRESSIONS } from "./wire-formats";
import { TensorSpecSchema } from "./tensor";
import { LoadSchema } from "./load-messages";
export { LoadPsServerSchema, LoadPsWorkerSchema, LoadReplicaSchema, LoadSchema, LoadStageSchema, type LoadMessage, type LoadOf, type RoleName } from "./load-messages";
import { WireErrorSchema } from "./wire-error";
import { NoticeSchema, OutputSchema, ProgressSchema } from "./worker-reports";
import { WorkerMemorySchema } from "./worker-memory";
import { id, v } from "./fields";
import { EvaluatedSchema, EvaluateSchema } from "./evaluate-messages";
import { ProbedSchema, ProbeSchema, ProfiledSchema, ProfileSchema, ReplicaStepSchema, RingProbedSchema, RingProbeSchema } from "./profile-messages";

/**
 * Every control message, as one zod discriminated union on `type`. Each carries `v`
 * (PROTOCOL_VERSION). Requests carry `id`; replies carry `re`, the id they answer.
 * A message with `attachments` is followed on the same connection by binary frames holding
 * those tensors (kind "attachment", seq = the message id), in order.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits");
const ms = z.number().finite().nonnegative();
const attachments = z.array(TensorSpecSchema).max(4096);
/** A value computed from the user's model and data: NaN and Infinity are what they are (see json.ts). */
const measured = z.custom<number>((x) => typeof x === "number", "must be a number");

/** A GPU as its worker reports it: what kind, which adapter, whether it is a software rasteriser. */
export const GpuFactsSchema = z.strictObject({
  /** "cuda": through tfjs-node-gpu; "webgpu": through Dawn or a browser's WebGPU; "webgl": a browser tab's WebGL. */
  kind: z.enum(["cuda", "webgpu", "webgl"]),
  name: z.string().max(256),
  vendor: z.string().max(256),
  architecture: z.string().max(256),
  description: z.string().max(512),
  /** A CPU rasteriser standing in for a GPU (SwiftShader, llvmpipe): correct, and slow. */
  software: z.boolean(),
  /** The largest buffer the adapter allows, bytes. */
  maxBufferBytes: z.number().nonnegative(),
  /** Host-device transfers, measured when the worker joined (a 4 MiB read back and upload, the slower of the two), bytes/s. */
  transferBytesPerSecond: z.number().nonnegative().optional(),
  /** The Vulkan driver manifest the worker was given (it sees that driver's adapters only), where it was given one. */
  driver: z.string().max(4096).optional(),
});
/** A GPU as its worker reports it. */
export type GpuFacts = z.infer<typeof GpuFactsSchema>;

export const WorkerInfoSchema = z.strictObject({
  pid: z.number().int(),
  hostname: z.string().max(256),
  version: z.string().max(64),
  node: z.string().max(64),
  /** The backend actually running, e.g. "cpu". */
  backend: z.string().max(64),
  /** What the backend computes on, e.g. "cpu", "cuda:0" or "webgpu: <adapter>" (software adapters say so). */
  device: z.string().max(512),
  /** The GPU, for workers on one. */
  gpu: GpuFactsSchema.optional(),
  /** Memory the device has, in bytes (host RAM for CPU backends). */
  memoryBytes: z.number().nonnegative(),
  cpus: z.number().int().nonnegative(),
  /** The cores it may run on (its CPU affinity), where the system says: a machine's cores are the union of its workers'. */
  cores: z.array(z.number().int().nonnegative().max(65535)).max(4096).optional(),
  /** Measured at join: matrix-multiply speed of the backend, in GFLOP/s. */
  gflops: z.number().nonnegative(),
  /** Measured at join: the fixed cost of one TF.js kernel on the backend, in microseconds. */
  kernelOverheadUs: z.number().nonnegative(),
  /** Plain-words remarks, e.g. why a faster backend was not used. */
  notes: z.array(z.string().max(1024)).max(32),
  /** Whether this worker can carry all-reduces over the native data plane, and if not, why. */
  dataPlane: z.strictObject({ native: z.boolean(), why: z.string().max(1024).optional() }).optional(),
});
/** What a worker says of itself when it joins: process, host, versions, backend and device, memory, measured speed, notes. */
export type WorkerInfo = z.infer<typeof WorkerInfoSchema>;

// Handshake (before authentication, only these three are accepted).
export const ChallengeSchema = z.strictObject({
  type: z.literal("challenge"), v, nonce: hex64,
  server: z.strictObject({ version: z.string().max(64), pid: z.number().int() }),
});
export const AuthSchema = z.strictObject({
  type: z.literal("auth"), v, nonce: hex64, mac: hex64,
  /** joining: a worker started with --join, authenticating to a driver's join listener. */
  role: z.enum(["driver", "peer", "joining", "relay"]),
  /** Peers say which session and rank they belong to; checked against what the driver configured. */
  peer: z.strictObject({
    session: z.string().max(128),
    rank: z.number().int().nonnegative(),
    /** ring: all-reduce neighbours; pipe: adjacent pipeline stages; ps: a worker reaching a parameter server. */
    link: z.enum(["ring", "pipe", "ps"]),
  }).optional(),
});
export const WelcomeSchema = z.strictObject({ type: z.literal("welcome"), v, mac: hex64 });

export const ErrorMessageSchema = z.strictObject({
  type: z.literal("error"), v, re: id.optional(), error: WireErrorSchema,
});

// Driver -> worker requests and their replies.
export const JoinSchema = z.strictObject({
  type: z.literal("join"), v, id,
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
  type: z.literal("joined"), v, re: id, info: WorkerInfoSchema,
  /** The worker's wall clock when it replied, for the driver's estimate of the clock offset. */
  clock: z.number().finite(),
});

export const ConfigureSchema = z.strictObject({
  type: z.literal("configure"), v, id,
  rank: z.number().int().nonnegative(),
  worldSize: z.number().int().positive().max(4096),
  /**
   * The all-reduce group this worker belongs to, in ring order (every rank for data parallelism,
   * the replicas of its stage for hybrid); it dials the member before it and accepts the one after.
   */
  ring: z.array(z.number().int().nonnegative()).max(4096),
  /** Pipeline neighbours: it dials `prev` (the stage before) and accepts `next` (the stage after). */
  pipe: z.strictObject({ prev: z.number().int().nonnegative().nullable(), next: z.number().int().nonnegative().nullable() }).optional(),
  /** Address of every rank, as the driver reached it. */
  addresses: z.array(z.string().max(512)).max(4096),
  /** Strategy "ps": the parameter servers this worker dials, in server order. */
  servers: z.array(z.string().max(512)).max(1024).optional(),
  /** Elastic training: the membership this wiring belongs to; steps of an earlier one are dropped. */
  generation: z.number().int().nonnegative().optional(),
  /** PEM certificate(s) to trust when dialling other workers over wss:// (public, not a secret). */
  ca: z.string().max(256 * 1024).optional(),
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
export const DataPortSchema = z.strictObject({ type: z.literal("dataPort"), v, port: z.number().int().min(1).max(65535) });
export const ConfiguredSchema = z.strictObject({ type: z.literal("configured"), v, re: id });

export const LoadedSchema = z.strictObject({
  type: z.literal("loaded"), v, re: id,
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
  shardRanges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])).max(65536).optional(),
});

export const StepSchema = z.strictObject({
  type: z.literal("step"), v, id,
  step: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative(),
  /** This replica's share of the global batch (its slice size / global batch size). */
  weight: z.number().min(0).max(1),
  /** Pipeline strategies: each micro-batch's share of the global batch (sizes come with the tensors). */
  micro: z.strictObject({
    sizes: z.array(z.number().int().nonnegative()).max(4096),
    weights: z.array(z.number().min(0).max(1)).max(4096),
  }).optional(),
  /** With feed "workers": this replica's slice, as positions [start, end) in the epoch's order. */
  range: z.strictObject({ start: z.number().int().nonnegative(), end: z.number().int().nonnegative() }).optional(),
  /** Elastic training: the membership the step was sent for (see configure). */
  generation: z.number().int().nonnegative().optional(),
  /** Under a learning-rate schedule: the rate this step's update uses (replicas, stages, and sync servers through the pushes). */
  learningRate: z.number().positive().finite().optional(),
  /**
   * Local SGD / DiLoCo replicas: "after" this step's own update, all-reduce the weights' change
   * since the last sync; "only" that, with no slice (a fit that stopped between syncs).
   */
  sync: z.enum(["after", "only"]).optional(),
  /** Strategy "ps": this worker's own step count, and (sync) the parameter version it must compute on. */
  ps: z.strictObject({ clock: z.number().int().nonnegative(), minVersion: z.number().int().nonnegative().optional() }).optional(),
  attachments,
});
export const StepDoneSchema = z.strictObject({
  type: z.literal("stepDone"), v, re: id,
  step: z.number().int().nonnegative(),
  /** Mean loss over this replica's slice. */
  loss: measured,
  /** The compiled metrics over the same samples, by their history names. */
  metrics: z.record(z.string().max(64), measured).optional(),
  /** This worker found NaN or Infinity in the step: in its input batch, its loss, or the gradient of a variable. */
  nonFinite: z.strictObject({ where: z.enum(["input", "loss", "gradient", "compression"]), variable: z.string().max(256).optional() }).optional(),
  /** The step's update was not applied, on this worker nor on any other (a worker found a non-finite value). */
  skipped: z.boolean().optional(),
  computeMs: ms, commMs: ms, waitMs: ms, applyMs: ms,
  /** When the worker started computing this step: its wall clock, in ms since the Unix epoch. */
  startedAt: z.number().finite(),
  /** Pipeline strategies: when each action ran, in ms from startedAt, and the most micro-batches held at once. */
  actions: z.array(z.strictObject({ kind: z.enum(["F", "B"]), micro: z.number().int().nonnegative(), start: ms, end: ms })).max(65536).optional(),
  inFlightMax: z.number().int().nonnegative().optional(),
  /** ZeRO-2 and -3: each layer's all-gather and reduce-scatter (layer: the index among layers with weights), in ms from startedAt. */
  collectives: z.array(z.strictObject({ kind: z.enum(["all-gather", "reduce-scatter"]), layer: z.number().int().nonnegative(), last: z.number().int().nonnegative().optional(), start: ms, end: ms })).max(65536).optional(),
  /** Time spent waiting on purpose (a slowdown), part of computeMs. */
  slowdownMs: ms.optional(),
  /** Bytes this worker sent in the step's all-reduce or push (headers included). */
  sentBytes: z.number().nonnegative().optional(),
  /** A worker on a GPU: time reading the step's results back from the device, and handing the update to it (part of computeMs and applyMs). */
  readbackMs: ms.optional(),
  uploadMs: ms.optional(),
  /** The worker's slice ran more than twice what its FLOPs predict: where the time went (once a fit). */
  slow: SlowStepSchema.optional(),
  /** Strategy "ps": the version pulled from each server, the most updates the push missed, and the time to pull and push. */
  ps: z.strictObject({
    pulled: z.array(z.number().int().nonnegative()).max(1024),
    staleness: z.number().int().nonnegative(),
    pullMs: ms,
    pushMs: ms,
  }).optional(),
});

export const FetchWeightsSchema = z.strictObject({ type: z.literal("fetchWeights"), v, id });
export const WeightsSchema = z.strictObject({
  type: z.literal("weights"), v, re: id,
  /** A parameter server's version: updates it has applied. */
  version: z.number().int().nonnegative().optional(),
  /** SHA-256 of every weight's bytes, in order: equal digests mean identical replicas. */
  digest: hex64,
  attachments,
});
export const DigestSchema = z.strictObject({ type: z.literal("digest"), v, id });
export const DigestReplySchema = z.strictObject({ type: z.literal("digestReply"), v, re: id, digest: hex64 });

// Worker -> parameter server, on the worker's "ps" link.
/** Asks for the server's shard; sync waits until the server's version reaches minVersion. */
export const PullSchema = z.strictObject({
  type: z.literal("pull"), v, id,
  rank: z.number().int().nonnegative(),
  minVersion: z.number().int().nonnegative().optional(),
});
export const PulledSchema = z.strictObject({
  type: z.literal("pulled"), v, re: id,
  version: z.number().int().nonnegative(),
  /** How long the server held the pull back, waiting for the version asked for (sync). */
  waitedMs: ms,
  attachments,
});
/** A gradient for the server's shard, computed on parameters of version `pulled`. */
export const PushSchema = z.strictObject({
  type: z.literal("push"), v, id,
  rank: z.number().int().nonnegative(),
  clock: z.number().int().nonnegative(),
  pulled: z.number().int().nonnegative(),
  /** The gradient's values come as 16-bit floats, packed two to an int32, then the rest as float32. */
  compression: z.enum(COMPRESSIONS).optional(),
  /** Sync mode under a learning-rate schedule: the rate of the step this push belongs to. */
  learningRate: z.number().positive().finite().optional(),
  attachments,
});
export const PushedSchema = z.strictObject({
  type: z.literal("pushed"), v, re: id,
  /** The server's version after this push (async), or the version its step will make (sync). */
  version: z.number().int().nonnegative(),
  /** Updates applied between the pull and this push: how stale the gradient was. */
  staleness: z.number().int().nonnegative(),
});
/** Driver -> parameter server: which of these pushes it applied (after a worker left mid-step). */
export const AppliedSchema = z.strictObject({
  type: z.literal("applied"), v, id,
  pushes: z.array(z.strictObject({ rank: z.number().int().nonnegative(), clock: z.number().int().nonnegative() })).max(4096),
});
export const AppliedReplySchema = z.strictObject({ type: z.literal("appliedReply"), v, re: id, applied: z.array(z.boolean()).max(4096), version: z.number().int().nonnegative() });

// Checkpoints: the optimizer's state of a replica, out and back in.
const optimizerStateFields = {
  format: z.enum(["native", "tfjs"]),
  /** One name per attachment, in order. */
  names: z.array(z.string().max(256)).max(65536),
  scalars: z.record(z.string().max(64), z.number().finite()),
  /** A sharded replica's state, laid flat over these [from, to) ranges of the flat parameters. */
  ranges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])).max(65536).optional(),
};
/** `only: "ranges"`: just the ranges a sharded replica holds state for (to send it its part of a checkpoint). */
export const FetchStateSchema = z.strictObject({ type: z.literal("fetchState"), v, id, only: z.literal("ranges").optional() });
export const StateSchema = z.strictObject({ type: z.literal("state"), v, re: id, ...optimizerStateFields, attachments });
export const SetStateSchema = z.strictObject({ type: z.literal("setState"), v, id, ...optimizerStateFields, attachments });
export const StateSetSchema = z.strictObject({ type: z.literal("stateSet"), v, re: id });
/** A ZeRO-3 replica loaded with weights "parts": the values of its ranges of the flat trainable weights, as one tensor. */
export const SetShardSchema = z.strictObject({ type: z.literal("setShard"), v, id, ranges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])).max(65536), attachments });
export const ShardSetSchema = z.strictObject({ type: z.literal("shardSet"), v, re: id });

/**
 * Elastic data parallelism: go back to `to` updates applied (or just report, without `to`). Local
 * SGD counts steps taken, and `sync: "last"` goes back to the last sync (its steps since re-run).
 */
export const RewindSchema = z.strictObject({ type: z.literal("rewind"), v, id, to: z.number().int().nonnegative().optional(), sync: z.literal("last").optional() });
export const RewoundSchema = z.strictObject({ type: z.literal("rewound"), v, re: id, applied: z.number().int().nonnegative() });

export const ReleaseSchema = z.strictObject({ type: z.literal("release"), v, id });
/** The fit is over on this worker: what it measured of its memory during the fit, where it had a model loaded. */
export const ReleasedSchema = z.strictObject({ type: z.literal("released"), v, re: id, memory: WorkerMemorySchema.optional() });
export const ShutdownSchema = z.strictObject({ type: z.literal("shutdown"), v });

export const MessageSchema = z.discriminatedUnion("type", [
  ChallengeSchema, AuthSchema, WelcomeSchema, ErrorMessageSchema,
  JoinSchema, JoinedSchema, ConfigureSchema, ConfiguredSchema,
  LoadSchema, LoadedSchema, StepSchema, StepDoneSchema,
  FetchWeightsSchema, WeightsSchema, DigestSchema, DigestReplySchema, ProbeSchema, ProbedSchema,
  FetchStateSchema, StateSchema, SetStateSchema, StateSetSchema, SetShardSchema, ShardSetSchema, RewindSchema, RewoundSchema,
  PullSchema, PulledSchema, PushSchema, PushedSchema, AppliedSchema, AppliedReplySchema,
  ReleaseSchema, ReleasedSchema, ShutdownSchema, NoticeSchema, OutputSchema, ProgressSchema,
  ProfileSchema, ProfiledSchema, RingProbeSchema, RingProbedSchema, EvaluateSchema, EvaluatedSchema,
]);

export type Message = z.infer<typeof MessageSchema>;
export type MessageType = Message["type"];
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;
/** A message as written by the sender: `v` is filled in by the channel. */
export type Outgoing<T extends MessageType = MessageType> = T extends MessageType
  ? Omit<MessageOf<T>, "v">
  : never;
export type Request = Extract<Message, { id: number }>;
export type Reply = Extract<Message, { re: number }>;
