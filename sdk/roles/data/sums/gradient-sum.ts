import type { FlatRanges } from "../../../model/flat-state";
import type { LoadOf, MessageOf } from "../../../protocol/messages";
import type { Tensorlike } from "../../../protocol/tensor";
import type { Feed } from "../../../compute/objective";
import type { HostIO, RoleReply } from "../../role";
import type { LoadedReplica } from "../../../compute/loaded-replica";
import type { OptimizerState } from "../../../compute/tfjs-update";
import type { CommHook } from "../hooks/comm-hook";
import type { ReplicaSlice } from "../replica-slice";
import type { StepBuffer } from "../step-buffer";
import type { StepResult } from "../step-result";

/** One step of the driver's as a summing scheme takes it: this replica's slice and its share of the global batch. */
export interface StepInput {
  readonly weight: number;
  readonly x: Feed;
  readonly y: Feed;
  readonly step: number;
  /** The step's rate under a learning-rate schedule (else the optimizer's own). */
  readonly learningRate: number | undefined;
  /** Local SGD: the step ends with a sync ("after"), or is nothing but one ("only", no slice). */
  readonly sync: "after" | "only" | undefined;
  /** This step all-reduces in buckets during the backward pass (true) or once after it (false); undefined: as loaded. */
  readonly overlap?: boolean | undefined;
}

/** What a replica hands the summing scheme it composes, made once at load. */
export interface ReplicaParts {
  readonly r: LoadedReplica;
  readonly load: LoadOf<"replica">;
  readonly hook: CommHook;
  readonly slice: ReplicaSlice;
  readonly buffer: StepBuffer;
  /** The worker's links, once the ring places it (ZeRO cuts its shards where the ring says). */
  readonly io: () => HostIO;
}

/** The validation sums a replica's shard of the data gives (see evaluateShard). */
export interface EvaluationSums {
  samples: number;
  lossSum: number;
  metricSums: Record<string, number>;
}

/**
 * How a replica's gradients become every replica's update, chosen once at load: one all-reduce
 * (in buckets where it can), ZeRO-1's reduce-scatter and all-gather around a shard of the
 * optimizer, ZeRO-2/3's per-layer collectives, or local rounds that sum the weights' change at
 * a sync (DiLoCo). One file per kind (sum-table.ts lists them); the replica around it keeps the
 * slicing of the data, the step's health and its records.
 */
export interface GradientSum {
  readonly kind: string;
  step(s: StepInput, io: HostIO): Promise<StepResult>;
  /** Elastic training: how many updates were applied (neither `to` nor `sync` given), or back to `to` (local rounds: the sync named). */
  rewind(msg: MessageOf<"rewind">): Promise<number>;
  /** The model's weights, whole (ZeRO-3 gathers them: a collective every replica is asked for at once). */
  weights(): Promise<Tensorlike[]>;
  exportState(): Promise<OptimizerState>;
  importState(state: OptimizerState): Promise<void>;
  /** The ranges of the flat parameters the optimizer's state covers (a shard's, or all of them). */
  stateRanges(): Promise<FlatRanges>;
  evaluate(x: Feed, y: Feed, msg: MessageOf<"evaluate">): Promise<EvaluationSums>;
  /** ZeRO-3 loaded in parts: the ranges whose values "setShard" brings. */
  awaiting(): FlatRanges | undefined;
  setShard(msg: MessageOf<"setShard">, attachments: readonly Tensorlike[]): Promise<RoleReply>;
  dispose(): void;
}
