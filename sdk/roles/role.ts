import type { WireFormat } from "../protocol/wire-formats";
import type { AllReduceStats } from "../collectives/ring-allreduce";
import type { LoadOf, Message, MessageOf, RoleName } from "../protocol/messages";
import type { Tensorlike } from "../protocol/tensor";
import type { Draft } from "../transport/channel";
import type { OptimizerState } from "../compute/tfjs-update";
import type { ReplicaStepChoice } from "../protocol/profile-messages";
import type { FlatRanges } from "../model/flat-state";

/** What a parameter-server worker's communication thread does for it. */
export interface ServerLinks {
  /** Each server's shard (one flat tensor), its version, and how long the server held the pull back. */
  pull(minVersion: number | undefined): Promise<{ shards: Float32Array[]; versions: number[]; waitedMs: number[] }>;
  /** One flat gradient per server; the versions after, and how stale each server found it. */
  /**
   * `learningRate`: the step's rate under a schedule (sync servers apply the step with it).
   * `standIn`: pushed as that lost rank's, not this worker's (see the step's ps.standIn).
   */
  push(
    clock: number,
    pulled: number[],
    shards: Float32Array[],
    wires?: WireFormat[],
    learningRate?: number,
    standIn?: number,
  ): Promise<{ versions: number[]; staleness: number[] }>;
}

/** The worker's links, which the host's communication thread holds, as a role may use them during a step. */
export interface HostIO {
  /**
   * Sums `data` with this worker's all-reduce group (the step's membership, in elastic
   * training); with `wire`, its leading values travel compressed (see AllReducer.run).
   */
  allReduce(data: Float32Array, wire?: WireFormat): Promise<{ data: Float32Array; stats: AllReduceStats }>;
  /**
   * The all-reduce's first phase alone: `shardOf(data.length)` of the result holds the sum (the
   * same bits an all-reduce gives it); the rest of the buffer is left partly summed.
   */
  reduceScatter(data: Float32Array, wire?: WireFormat): Promise<{ data: Float32Array; stats: AllReduceStats }>;
  /** The second phase alone: every member's shard of `data` (as it stands there) into every member's buffer, in float32. */
  allGather(data: Float32Array): Promise<{ data: Float32Array; stats: AllReduceStats }>;
  /** [start, end) of this worker's shard of a buffer of `length` values in its ring. */
  shardOf(length: number): [start: number, end: number];
  /**
   * Buckets of one buffer all-reduced while the step still computes, where the ring runs on
   * this thread's native data plane; null where it does not (the WebSocket path moves the
   * whole buffer to the communication thread).
   */
  overlap(): OverlapRing | null;
  /** The activation (from the stage before) or gradient (from the stage after) of a micro-batch. */
  receive(kind: "activation" | "gradient", step: number, micro: number): Promise<Float32Array>;
  send(to: "prev" | "next", kind: "activation" | "gradient", step: number, micro: number, data: Float32Array): void;
  servers: ServerLinks;
}

/** All-reduces of parts of one buffer, one after another in the order started, while the caller goes on. */
export interface OverlapRing {
  /** Starts summing `part` (a view of the buffer, not written again until done) after the parts started before. */
  start(part: Float32Array, wire?: WireFormat): void;
  /** Every part started so far, summed; each one's stats. */
  done(): Promise<AllReduceStats[]>;
}

/** What every role measures of a step, in ms (startedAt: its wall clock when the step began). */
export interface StepTimes {
  loss: number;
  startedAt: number;
  computeMs: number;
  commMs: number;
  waitMs: number;
  applyMs: number;
}

/** What a step reports to the driver (the stepDone message without its envelope). */
export type StepReport = Omit<MessageOf<"stepDone">, "type" | "v" | "re" | "step">;

/** A reply a role makes to a request only it answers. */
export interface RoleReply {
  draft: Draft;
  attachments?: Tensorlike[];
}

/**
 * What a worker does for one strategy while a model is loaded: a data-parallel replica, a
 * pipeline stage, a parameter server or a parameter-server worker. The host (process, threads,
 * links, lifecycle) serves the requests every role shares and hands the rest to the role.
 */
export interface WorkerRole {
  /** What the load reply says about what was built. */
  readonly loaded: {
    paramCount: number;
    gradientLength: number;
    datasetSize?: number;
    dataBytes?: number;
    replicaStep?: ReplicaStepChoice;
    shardRanges?: Array<[number, number]>;
  };
  step(msg: MessageOf<"step">, attachments: Tensorlike[], io: HostIO): Promise<StepReport>;
  /** True: once a step has resolved, nothing of the role holds its attachments, and the host may hand their memory on. */
  readonly freesStepInputs?: boolean;
  /** What it does between steps, for a stall report (default: waiting for a step). */
  readonly waiting?: string;
  /** The weights it holds (a parameter server: its shard, and the updates it applied). */
  weights(): Promise<{ tensors: Tensorlike[]; version?: number }>;
  exportState(): Promise<OptimizerState>;
  importState(state: OptimizerState): Promise<void>;
  /** The ranges of the flat parameters a data-parallel replica holds optimizer state for (sharded: its own; else all). */
  stateRanges?(): Promise<FlatRanges>;
  /**
   * Requests only some roles answer (rewind, applied; pulls and pushes from peers). Returns
   * undefined for a request this role does not answer.
   */
  answer?(msg: Message, attachments: Tensorlike[], io?: HostIO): Promise<RoleReply> | undefined;
  dispose(): void;
}

/** What the host knows that a role needs when it loads. */
export interface RoleEnv {
  memoryCapBytes: number | null;
  stepTimeoutMs: number;
  /** The worker's links as they are now (a ZeRO-3 replica cuts its shard where its ring places it, at load). */
  io?: () => HostIO;
}

/** Makes the role a load message names, from that message (its fields, required where the role needs them). */
export type RoleFactory<R extends RoleName = RoleName> = (
  msg: LoadOf<R>,
  attachments: Tensorlike[],
  env: RoleEnv,
) => Promise<WorkerRole>;

/** Every role a worker can play, by the name a load gives: a worker plays only these, and runs no code it is sent. */
export type RoleTable = {
  readonly [R in RoleName]: (msg: LoadByRole[R], attachments: Tensorlike[], env: RoleEnv) => Promise<WorkerRole>;
};

/** Each role's load message, by role name. */
type LoadByRole = { [R in RoleName]: LoadOf<R> };

/**
 * Makes the role a load names (`role` is `msg.role`): the mapped types keep one role's message
 * and factory together, so no role's fields reach another's factory.
 */
export function makeRole<R extends RoleName>(
  table: RoleTable,
  role: R,
  msg: LoadByRole[R],
  attachments: Tensorlike[],
  env: RoleEnv,
): Promise<WorkerRole> {
  return table[role](msg, attachments, env);
}
