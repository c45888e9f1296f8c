import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../data/dataset";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import type { DataParallelPlan } from "../../plan/plans";
import type { GradientSumSpec } from "../../protocol/gradient-sum-spec";
import type { LoadOf } from "../../protocol/messages";
import type { DataChoices } from "../../protocol/data-option-pairs";
import { topologyOf } from "../../model/topology";

/** A replica's load as the driver sends it (the channel adds version, id and attachments). */
export type ReplicaLoad = Omit<LoadOf<"replica">, "v" | "id" | "attachments">;

/** The summing scheme a plan's replicas compose (undefined: one all-reduce, DDP's). */
export function sumOf(
  plan: Pick<DataParallelPlan, "shard" | "sync" | "replicas" | "buckets">,
): GradientSumSpec | undefined {
  if (plan.sync) return { kind: "local", outer: plan.sync.outer };
  if (plan.shard === "optimizer") return { kind: "zero-1", over: plan.replicas };
  if (!plan.shard) return undefined;
  const kind = plan.shard === "gradients" ? "zero-2" : "zero-3";
  return { kind, over: plan.replicas, ...(plan.buckets ? { bucketBytes: plan.buckets.capBytes } : {}) };
}

/** A plan's choices as the pairs refused read them (a fit adds its checkpoint and accumulate). */
export function choicesOfPlan(plan: DataParallelPlan): DataChoices {
  return {
    compression: plan.hook?.kind ?? "none",
    shard: plan.shard ?? "none",
    syncEvery: plan.sync?.every ?? 0,
    batchNorm: plan.batchNorm,
    elastic: plan.elastic !== null,
    feed: plan.feed,
  };
}

/** What every replica of a fit is sent: the model, the objective and the plan's choices, each field once. */
export function replicaLoadOf(
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  plan: DataParallelPlan,
  workers: number,
  stepTimeoutMs: number,
): (rank: number) => ReplicaLoad {
  const topology = topologyOf(model);
  const hook = plan.hook;
  const sum = sumOf(plan);
  const fields: ReplicaLoad = {
    type: "load",
    role: "replica",
    topology,
    optimizer: o.optimizer,
    loss: o.loss,
    ...(o.heads ? { heads: o.heads } : {}),
    metrics: o.metrics,
    ...(o.classTable ? { classWeight: o.classTable } : {}),
    // The largest chunk a replica computes at once, for its memory check.
    replicaBatch: Math.ceil(o.batchSize / workers / o.accumulate),
    stepTimeoutMs,
    ...(plan.feed === "workers" ? { data: { source: dataset.source!, shuffle: o.shuffle, seed: o.seed } } : {}),
    ...(plan.elastic ? { elastic: true } : {}),
    ...(hook ? { hook } : {}),
    ...(sum ? { sum } : {}),
    ...(plan.overlap.on ? { overlap: true } : {}),
    ...(o.accumulate > 1 ? { accumulate: o.accumulate } : {}),
    ...(plan.batchNorm === "sync" ? { batchNorm: "sync" as const } : {}),
  };
  return (rank) => ({ ...fields, ...slowdown(plan, rank) });
}

/** The slowdown to send worker `rank`, if it is slowed down on purpose. */
export function slowdown(
  plan: { workers: ReadonlyArray<{ rank: number; slowdown: number }> },
  rank: number,
): { slowdown?: number } {
  const f = plan.workers.find((w) => w.rank === rank)?.slowdown ?? 1;
  return f > 1 ? { slowdown: f } : {};
}
