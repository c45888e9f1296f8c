import { z } from "zod";
import { workerCount, type ClusterSpec } from "../../config/cluster-spec";
import { ConfigError } from "../../errors/errors";

const stages = z.number().int().min(2).max(1024);
/** Micro-batches per replica per step. Default 4. */
export const microBatches = z.number().int().min(1).max(4096).default(4);
/** "gpipe": all forwards, then all backwards; "1f1b" (default): one forward, one backward. */
export const schedule = z.enum(["gpipe", "1f1b"]).default("1f1b");

/** strategy("model"): contiguous layer ranges on different workers, one whole batch at a time. */
export const ModelOptionsSchema = z.strictObject({
  /** Stages, one worker each. Default: the number of workers. */
  stages: stages.optional(),
});
/** strategy("pipeline"): model stages, each batch cut into micro-batches that flow through them. */
export const PipelineOptionsSchema = z.strictObject({ stages: stages.optional(), microBatches, schedule });
/** strategy("hybrid"): R pipeline replicas x S stages; each stage's replicas average gradients by all-reduce. */
export const HybridOptionsSchema = z.strictObject({
  stages: z.number().int().min(1).max(1024),
  /** Default: workers / stages. */
  replicas: z.number().int().min(1).max(4096).optional(),
  microBatches,
  schedule,
});

export type ModelOptions = z.output<typeof ModelOptionsSchema>;
export type PipelineOptionsGiven = z.output<typeof PipelineOptionsSchema>;
export type HybridOptions = z.output<typeof HybridOptionsSchema>;

/** Model and pipeline parallelism: one stage per worker, and at least two. */
export function checkOneStagePerWorker(
  kind: "model" | "pipeline",
  o: { stages?: number | undefined },
  spec: ClusterSpec,
): void {
  const n = workerCount(spec);
  if (o.stages !== undefined && o.stages !== n) {
    throw new ConfigError(`${kind}: stages(${o.stages}) != workers(${n}): each stage runs on its own worker`, {
      hint: `use ${n} stages, or strategy("hybrid", { stages: ${o.stages}, replicas: ${Math.max(1, Math.floor(n / o.stages))} }) to replicate stages`,
    });
  }
  if (n < 2)
    throw new ConfigError(`${kind} parallelism needs at least 2 workers (it has ${n})`, {
      hint: 'use .workers(2) or more, or strategy("data")',
    });
}

/** Hybrid: replicas x stages must be the workers. */
export function checkHybridOptions(o: HybridOptions, spec: ClusterSpec): void {
  const n = workerCount(spec);
  const replicas = o.replicas ?? Math.floor(n / o.stages);
  if (replicas * o.stages !== n) {
    throw new ConfigError(
      `hybrid: replicas(${replicas}) x stages(${o.stages}) = ${replicas * o.stages} != workers(${n})`,
      { hint: `choose stages and replicas whose product is ${n}` },
    );
  }
}
