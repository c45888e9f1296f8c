import { ConfigError, ModelError } from "../../errors/errors";
import { planSplits, replicaSlices } from "../../plan/batches";
import { formatBytes, optimizerSlots } from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import { partition, stageNeedBytes, stageNeedText, type PartitionRequest, type StageCost } from "../../plan/partition";
import { sampleBytes, type Prediction } from "../../plan/predict";
import { predictPipeline } from "../../plan/predict-pipeline";
import type { ModelProfile } from "../../plan/profile";
import type { PipelineKind, PipelinePlan, PlanDevice, StagePlan } from "../../plan/plans";
import { speedsOf } from "../../plan/speeds";
import { formatSchedule, makeSchedule, maxInFlight, type Schedule, type ScheduleName } from "../../plan/schedules";
import { workerCount, type ClusterSpec } from "../../config/cluster-spec";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";

export interface PipelineOptions {
  kind: PipelineKind;
  stages: number;
  replicas: number;
  microBatches: number;
  schedule: ScheduleName;
  batchSize?: number;
  datasetSize?: number;
  optimizer?: OptimizerSpec;
  devices?: readonly PlanDevice[];
  /** The model's layers timed on a worker: the prediction rests on it instead of FLOPs. */
  profile?: ModelProfile;
  memoryCapBytes?: number;
  /** Stages whose layer ranges were set with plan.place(); the partitioner splits the rest around them. */
  pinned?: ReadonlyMap<number, readonly [number, number]>;
  /** Why this strategy and shape were chosen (strategy "auto" says). */
  reasons?: readonly string[];
}

const elems = (shape: ReadonlyArray<number | null>): number[] => shape.slice(1).map((d) => d ?? 1);

/** The memory each stage may use: the cap, else what its worker reported, else unlimited. */
export function stageMemory(o: { memoryCapBytes?: number; devices?: readonly PlanDevice[] }, rank: number): number {
  const dev = o.devices?.[rank]?.memoryBytes;
  const known = dev && dev > 0 ? dev : Infinity;
  return Math.min(known, o.memoryCapBytes ?? Infinity);
}

export function planPipelineWith(model: ModelSummary, o: PipelineOptions): PipelinePlan {
  if (model.unsplittable !== null) {
    throw new ModelError(`"${model.name}" cannot be split into stages: ${model.unsplittable}`, {
      hint: 'train this model with strategy("data") or strategy("ps"), which keep the whole model on every worker',
      details: { strategy: o.kind },
    });
  }
  const S = o.stages;
  const R = o.replicas;
  const M = o.kind === "model" ? 1 : o.microBatches;
  const schedule = makeSchedule(o.kind === "model" ? "gpipe" : o.schedule, S, M);
  const batch = pipelineBatch(o.batchSize, o.datasetSize, R, M);
  const micro = batch?.microBatch ?? 1;
  const request: PartitionRequest = {
    layers: model.layers,
    stages: S,
    microBatchSize: micro,
    optimizerSlots: o.optimizer ? optimizerSlots(o.optimizer) : 0,
    inFlight: (s) => maxInFlight(schedule, s),
    memoryBytes: (s) => Math.min(...Array.from({ length: R }, (_, r) => stageMemory(o, r * S + s))),
    cuts: model.cuts,
    ...(o.pinned ? { pinned: o.pinned } : {}),
  };
  const p = partition(request);
  if (!p.ok) {
    throw new ConfigError(`cannot split "${model.name}" into ${S} stages: ${p.reason}`, {
      hint: "use more stages (workers), a smaller batch or more micro-batches, or raise .memory()",
    });
  }
  const costs = p.stages;
  const placed = [...(o.pinned ?? new Map<number, readonly [number, number]>())].sort((a, b) => a[0] - b[0]);
  const stagePlans = stagePlansOf(model, costs, schedule);
  checkStageMemory(stagePlans, request.memoryBytes);
  const prediction = predictStages(model, stagePlans, { schedule, micro, batch, R }, o);
  return {
    strategy: o.kind,
    worldSize: S * R,
    stages: S,
    replicas: R,
    microBatches: M,
    schedule,
    ranks: Array.from({ length: R }, (_, r) => Array.from({ length: S }, (_, s) => r * S + s)),
    stagePlans,
    placed,
    model,
    batch,
    optimizer: o.optimizer ?? null,
    devices: o.devices ?? null,
    prediction,
    reasons: [...(o.reasons ?? [])],
  };
}

/** Each stage's layers, what crosses into and out of it, the model inputs it reads and the outputs it makes. */
function stagePlansOf(model: ModelSummary, costs: readonly StageCost[], schedule: Schedule): StagePlan[] {
  return costs.map((c, s) => ({
    ...c,
    stage: s,
    layerNames: model.layers.slice(c.from, c.to).map((l) => l.name),
    inputShape: elems(crossing(model, c.from)),
    outputShape: elems(crossing(model, c.to)),
    feeds: model.inputReaders.flatMap((readers, k) => (readers.some((l) => l >= c.from && l < c.to) ? [k] : [])),
    heads: model.outputMakers.flatMap((l, k) => (l >= c.from && l < c.to ? [k] : [])),
    inFlight: maxInFlight(schedule, s),
  }));
}

/** The shape of the one tensor crossing point j between stages (the model's input at 0, its output at the end). */
function crossing(model: ModelSummary, j: number): ReadonlyArray<number | null> {
  const c = model.cuts[j];
  if (c?.ok) return c.shape;
  return j === 0 ? model.inputShape : j === model.layers.length ? model.outputShape : model.layers[j]!.inputShape;
}

/** The global batch split among replicas and cut into micro-batches, or null without a batch size. */
function pipelineBatch(
  batchSize: number | undefined,
  datasetSize: number | undefined,
  R: number,
  M: number,
): PipelinePlan["batch"] {
  if (batchSize === undefined) return null;
  if (batchSize % R !== 0) {
    throw new ConfigError(
      `batchSize ${batchSize} is not divisible by ${R} replicas (${batchSize} % ${R} = ${batchSize % R})`,
      { hint: `use a multiple of ${R}` },
    );
  }
  const per = batchSize / R;
  if (per < M) {
    throw new ConfigError(
      `each replica's batch of ${per} cannot be cut into ${M} micro-batches (${batchSize} / ${R} replicas = ${per} < ${M})`,
      {
        hint: `use a batch of at least ${M * R}, or fewer micro-batches`,
      },
    );
  }
  return {
    globalBatch: batchSize,
    perReplica: replicaSlices(batchSize, R),
    microBatch: Math.ceil(per / M),
    splits: planSplits(batchSize, datasetSize, R, M),
  };
}

/** Every stage within the memory its worker may use (a placed stage can exceed it). */
function checkStageMemory(stagePlans: readonly StagePlan[], memoryBytes: (stage: number) => number): void {
  for (const st of stagePlans) {
    const cap = memoryBytes(st.stage);
    if (stageNeedBytes(st) > cap) {
      throw new ConfigError(
        `stage ${st.stage} (layers [${st.from}, ${st.to})) needs ${stageNeedText(st)} but its worker may use ${formatBytes(cap)}`,
        { hint: "place fewer layers on that stage, or use more stages" },
      );
    }
  }
}

/** Step time and throughput from the cost model, when the workers' speeds and the batch are known. */
function predictStages(
  model: ModelSummary,
  stagePlans: readonly StagePlan[],
  p: { schedule: Schedule; micro: number; batch: PipelinePlan["batch"]; R: number },
  o: Pick<PipelineOptions, "devices" | "profile">,
): Prediction | null {
  const speeds = speedsOf(o.devices);
  if (!speeds || !p.batch) return null;
  const stages = stagePlans.map((st) => ({
    from: st.from,
    to: st.to,
    flopsPerSample: st.flopsPerSample,
    layers: st.to - st.from,
    gradientBytes: model.layers.slice(st.from, st.to).reduce((n, l) => n + l.trainableParams, 0) * 4,
    outputElementsPerSample: st.outputShape.reduce((a, d) => a * d, 1),
  }));
  const feedBytes = p.batch.globalBatch * sampleBytes(model);
  return predictPipeline(
    {
      stages,
      schedule: p.schedule,
      microBatchSize: p.micro,
      globalBatch: p.batch.globalBatch,
      replicas: p.R,
      feedBytes,
      ...(o.profile ? { profile: o.profile } : {}),
    },
    speeds,
  );
}

/** What model, pipeline and hybrid clusters plan with, from their options. */
export function stagedOptions(
  kind: PipelineKind,
  o: { stages?: number | undefined; replicas?: number | undefined; microBatches?: number; schedule?: ScheduleName },
  spec: ClusterSpec,
): Omit<PipelineOptions, "batchSize" | "optimizer" | "devices"> {
  const n = workerCount(spec);
  const stages = o.stages ?? n;
  const memory = spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {};
  const replicas = kind === "hybrid" ? (o.replicas ?? Math.floor(n / stages)) : 1;
  return {
    kind,
    stages,
    replicas,
    microBatches: kind === "model" ? 1 : (o.microBatches ?? 4),
    schedule: kind === "model" ? "gpipe" : (o.schedule ?? "1f1b"),
    ...memory,
  };
}

export function formatPipelinePlan(plan: PipelinePlan): string {
  const lines = [
    `${plan.strategy} plan: ${plan.replicas} replica(s) x ${plan.stages} stage(s) on ${plan.worldSize} worker(s), ${plan.microBatches} micro-batch(es), schedule ${plan.schedule.name}`,
  ];
  if (plan.batch)
    lines.push(
      `global batch ${plan.batch.globalBatch} = ${plan.replicas} x ${plan.batch.perReplica[0]} per replica, micro-batches of ${plan.batch.microBatch}`,
    );
  lines.push("stage  layers       ranks       MFLOP/sample  state       activations  in flight");
  for (const st of plan.stagePlans) {
    const ranks = plan.ranks.map((row) => row[st.stage]).join(",");
    lines.push(
      `${String(st.stage).padEnd(7)}${`[${st.from}, ${st.to})`.padEnd(13)}${ranks.padEnd(12)}${(st.flopsPerSample / 1e6).toFixed(2).padStart(12)}  ${formatBytes(st.stateBytes).padEnd(12)}${formatBytes(st.activationBytes).padEnd(13)}${st.inFlight}`,
    );
  }
  if (plan.prediction)
    lines.push(
      `predicted: ${plan.prediction.stepMs.toFixed(1)} ms per step, ${plan.prediction.samplesPerSecond.toFixed(0)} samples/s, bubble ${(plan.prediction.bubble * 100).toFixed(0)}%`,
    );
  lines.push(formatSchedule(plan.schedule));
  return lines.join("\n");
}

/** Where a graph could be cut, when that is not everywhere. */
function cutNote(model: ModelSummary): string {
  const inner = model.cuts.slice(1, -1);
  const points = inner.filter((c) => c.ok).length;
  const masked = inner.flatMap((c) => (!c.ok && c.mask ? [c.crossing[0]!] : []));
  const why = masked.length
    ? `residual blocks stay whole; not after ${masked.map((p) => `"${p}"`).join(", ")}, whose output carries a mask a stage would not pass on`
    : "residual blocks stay whole";
  return points < model.layers.length - 1
    ? `, at the ${points} of ${model.layers.length - 1} points between layers where one tensor crosses (${why})`
    : "";
}

export function explainPipelinePlan(plan: PipelinePlan): string {
  const lines = [...plan.reasons];
  const S = plan.stages;
  if (plan.placed.length > 0)
    lines.push(`placed by hand: ${plan.placed.map(([s, [a, b]]) => `stage ${s} = layers [${a}, ${b})`).join(", ")}`);
  if (plan.placed.length < S) {
    lines.push(
      `split ${plan.model.layers.length} layers into ${S} contiguous stages minimising the slowest stage${plan.placed.length > 0 ? " (around the placed ones)" : ""}${cutNote(plan.model)}: ${plan.stagePlans
        .map(
          (c) =>
            `stage ${c.stage} = layers [${c.from}, ${c.to}) with ${(c.flopsPerSample / 1e6).toFixed(2)} MFLOP/sample`,
        )
        .join(", ")}`,
    );
  }
  if (plan.prediction) {
    lines.push(
      `predicted step ${plan.prediction.stepMs.toFixed(1)} ms (${plan.prediction.computeMs.toFixed(1)} ms through the pipeline, ${plan.prediction.commMs.toFixed(1)} ms all-reduce), ${plan.prediction.samplesPerSecond.toFixed(0)} samples/s, from ${plan.prediction.basis}`,
    );
  }
  return lines.join("\n");
}
