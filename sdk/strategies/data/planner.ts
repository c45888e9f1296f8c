import { ConfigError } from "../../errors/errors";
import { planSplits, replicaSlices, stepsPerEpoch } from "../../plan/batches";
import { estimateReplicaMemory, formatBytes, memoryTotal, shardedMemory, type MemoryEstimate } from "../../plan/memory";
import { bucketCapBytes, largestBucketBytes, shardBuckets, trainableLayerBytes } from "../../plan/shard-buckets";
import type { ModelSummary } from "../../plan/model-summary";
import { predictData, sampleBytes, type ReplicaWork } from "../../plan/predict";
import { replicaWork } from "./local-sync-work";
import { hookOfOptions, hookPrice, type HookPrice } from "./hook-prices";
import type { DataParallelPlan, PlanOptions } from "../../plan/plans";
import { speedsOf } from "../../plan/speeds";
import { chooseOverlap, type OverlapChoice } from "../../plan/overlap";
import { hostRing } from "../../plan/host-ring";
import { relayNote } from "../../plan/relay-hops";
import { slowdownOf, workerCount, type ClusterSpec } from "../../config/cluster-spec";
import type { DataOptions } from "./options";

/** The plan's elastic part: how few workers it goes on with, the spares that wait, and whether it starts new workers for those lost. */
function elasticOf(given: DataOptions, spec: ClusterSpec): DataParallelPlan["elastic"] {
  if (!given.elastic) return null;
  const evict = given.elastic.evict ? Object.freeze({ ...given.elastic.evict }) : null;
  return Object.freeze({
    minWorkers: given.elastic.minWorkers,
    replace: given.elastic.replace === true,
    spares: spec.spares ?? 0,
    evict,
  });
}

/** Data parallelism as planned with `given` options (defaults: strategy("data") without any). */
export function planDataParallel(
  given: DataOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  options: PlanOptions = {},
): DataParallelPlan {
  const { batchSize } = options;
  const n = workerCount(spec);
  if (batchSize !== undefined) checkBatch(batchSize, n);
  // Workers sharing a machine are ring neighbours (the plan says so where machines are shared).
  const placed =
    options.devices?.length === n
      ? hostRing(options.devices.map((d) => d.host))
      : { order: Array.from({ length: n }, (_, r) => r), note: null };
  const ring = placed.order;
  const gradientBytes = model.trainableParamCount * 4;
  const hook = hookOfOptions(given.compression);
  // What the ring moves and each replica carries: the hook's to say (16-bit values halve the bytes; PowerSGD sends r (n + m) values per matrix).
  const price = hookPrice(hook, model);
  const sync = given.sync
    ? Object.freeze({ every: given.sync.every, outer: Object.freeze({ ...given.sync.outer }) })
    : null;
  const shard = given.shard ?? null;
  const overlap = Object.freeze(overlapOf(given, price, n, options.devices));
  const fitted = fittedBuckets(given, spec, model, batchSize, options, price.carriedBytes, overlap.on);
  const { cap, units, ringBytes, collectives } = ringTraffic(shard, fitted.bucketMB, model, gradientBytes, price);
  // A fit's plan knows its epochs: syncs after every H steps of one and at its end, ceil(steps / H) of them.
  const perEpoch =
    batchSize !== undefined && options.datasetSize !== undefined ? stepsPerEpoch(options.datasetSize, batchSize) : null;
  const syncShare = !sync ? 1 : perEpoch ? Math.ceil(perEpoch / sync.every) / perEpoch : 1 / sync.every;
  const stepWireBytes = ringBytes * syncShare;
  const memory = replicaMemory(model, n, batchSize, options, shard, price.carriedBytes, cap ?? 0, overlap.on);
  const wire = { stepWireBytes, allReduces: collectives * syncShare, syncShare };
  const prediction = predictionOf(given, spec, model, options, price, sync, wire);
  const ringNote = [placed.note, relayNote(ring, options.devices, options.ring)].filter((x) => x !== null).join("; ");
  return Object.freeze({
    strategy: "data" as const,
    feed: given.feed,
    elastic: elasticOf(given, spec),
    worldSize: n,
    replicas: n,
    ring: Object.freeze(ring),
    workers: Object.freeze(Array.from({ length: n }, (_, rank) => workerPlace(spec, model, ring, rank))),
    ringNote: ringNote || null,
    model,
    gradientBytes,
    hook,
    overlap,
    batchNorm: given.batchNorm,
    sync,
    shard,
    buckets: bucketsOf(cap, units, fitted.why),
    allReduce: allReduceOf(n, stepWireBytes),
    batch: batchOf(batchSize, n, options.datasetSize),
    memory: Object.freeze(memory),
    devices: options.devices ? Object.freeze(options.devices.map((d) => Object.freeze({ ...d }))) : null,
    prediction,
    reasons: Object.freeze([...(options.reasons ?? [])]),
  });
}

/** Each rank sends 2(N-1)/N of what the ring carries a step. */
function allReduceOf(n: number, stepWireBytes: number): DataParallelPlan["allReduce"] {
  const bytesSentPerRank = n > 1 ? Math.round((2 * (n - 1) * stepWireBytes) / n) : 0;
  return Object.freeze({ algorithm: "ring" as const, bytesSentPerRank });
}

/** ZeRO-2/3's buckets of layers: their limit, count and largest (none for other schemes). */
function bucketsOf(cap: number | null, units: readonly number[], why: string | undefined): DataParallelPlan["buckets"] {
  if (cap === null) return null;
  return Object.freeze({
    capBytes: cap,
    count: units.length,
    largestBytes: Math.max(0, ...units),
    ...(why ? { why } : {}),
  });
}

function workerPlace(
  spec: ClusterSpec,
  model: ModelSummary,
  ring: readonly number[],
  rank: number,
): DataParallelPlan["workers"][number] {
  const place = { rank, replica: rank, ringPosition: ring.indexOf(rank), layers: "all" as const };
  return Object.freeze({ ...place, params: model.paramCount, slowdown: slowdownOf(spec, rank) });
}

function batchOf(batchSize: number | undefined, n: number, datasetSize: number | undefined): DataParallelPlan["batch"] {
  if (batchSize === undefined) return null;
  const perReplica = Object.freeze(replicaSlices(batchSize, n));
  return Object.freeze({ globalBatch: batchSize, perReplica, splits: planSplits(batchSize, datasetSize, n) });
}

/**
 * The step predicted from the workers' measured speeds (none before launch, or without a batch),
 * and beside it the same batch on one worker where one could hold it: what explain() and
 * toString() hold the cluster up against.
 */
function predictionOf(
  given: DataOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  options: PlanOptions,
  price: HookPrice,
  sync: DataParallelPlan["sync"],
  wire: { stepWireBytes: number; allReduces: number; syncShare: number },
): DataParallelPlan["prediction"] {
  const { batchSize } = options;
  const n = workerCount(spec);
  const speeds = speedsOf(options.devices, options.ring);
  if (!speeds || batchSize === undefined) return null;
  const feedBytes = given.feed === "driver" ? batchSize * sampleBytes(model) : 0;
  // Where the workers run, for the busiest core's CPU time; the driver counted where it measured itself.
  const seats = options.devices
    ? { seats: { workers: options.devices, ...(options.driver ? { driver: options.driver } : {}) } }
    : {};
  const predict = (replicas: number, also?: ReplicaWork) =>
    predictData(
      {
        flopsPerSample: model.flopsPerSample,
        layers: model.layers.length,
        gradientBytes: wire.stepWireBytes,
        allReduces: wire.allReduces,
        globalBatch: batchSize,
        replicas,
        feedBytes,
        ...(options.profile ? { profile: options.profile } : {}),
        ...(also ? { also } : {}),
        ...seats,
      },
      speeds,
    );
  const hookWork = price.work(options.profile, speeds);
  const many = predict(n, replicaWork(model, { hookWork, sync, syncShare: wire.syncShare }, options.profile, speeds));
  const one = n > 1 && oneWorkerHolds(model, batchSize, options, spec) ? predict(1) : null;
  return one ? { ...many, oneWorker: one } : many;
}

/** The global batch is split evenly among replicas; say the arithmetic when it cannot be. */
export function checkBatch(batchSize: number, replicas: number): void {
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new ConfigError(`batchSize ${batchSize} must be a positive integer`);
  }
  if (batchSize % replicas !== 0) {
    const lower = Math.floor(batchSize / replicas) * replicas;
    const upper = lower + replicas;
    const options = [lower, upper].filter((b) => b > 0).map((b) => `${b} (${b / replicas} per replica)`);
    throw new ConfigError(
      `batchSize ${batchSize} is not divisible by ${replicas} replicas (${batchSize} % ${replicas} = ${batchSize % replicas})`,
      {
        hint: `use a multiple of ${replicas}, e.g. ${options.join(" or ")}`,
      },
    );
  }
}

/**
 * When the step's communication runs, and why. Sync statistics take the step in rounds, by
 * autodiff: no native step to overlap with. ZeRO-2 and -3 overlap as plain data parallelism
 * decides (a core to spare for the collectives' thread), each with a second buffer.
 */
function overlapOf(given: DataOptions, price: HookPrice, n: number, devices: PlanOptions["devices"]): OverlapChoice {
  if (given.batchNorm === "sync")
    return { on: false, why: 'batchNorm "sync" computes each step in all-reduced rounds' };
  if (given.sync) return { on: false, why: "the weights' change is all-reduced after a sync step's update" };
  if (given.shard === "parameters" || given.shard === "gradients") {
    const stage = given.shard === "parameters" ? 3 : 2;
    const c = chooseOverlap(given.overlap, n, devices);
    return c.on
      ? {
          ...c,
          what: `ZeRO-${stage}'s ${stage === 3 ? "gathers run a bucket of layers ahead of the pass (as FSDP's prefetch) and its " : ""}reduce-scatters run while the backward pass computes the next bucket, each holding a second buffer of the largest bucket`,
        }
      : {
          ...c,
          instead: `ZeRO-${stage}'s all-gathers and reduce-scatters, a bucket of layers' at a time, each waited for between the layers' computations`,
        };
  }
  if (given.shard)
    return { on: false, why: "the sharded update reduce-scatters the whole gradient after the backward pass" };
  if (price.whole) return { on: false, why: price.whole };
  const c = chooseOverlap(given.overlap, n, devices);
  // Where no core is spare, overlap gained 6% on one machine and lost 1-13% on another
  // (bench:scaling): only timing this model on these workers tells. An elastic fit's members
  // change under it, so it keeps the rule's choice.
  return given.overlap === "auto" && !c.on && n > 1 && !given.elastic ? { ...c, timed: true } : c;
}

/**
 * What a step moves over the ring, and in how many all-reduces' worth of hops. ZeRO-2 and -3 run
 * their collectives a bucket of layers at a time (`units`: each bucket's bytes; `cap` their limit).
 */
function ringTraffic(
  shard: DataParallelPlan["shard"],
  bucketMB: number | undefined,
  model: ModelSummary,
  gradientBytes: number,
  price: HookPrice,
): { cap: number | null; units: number[]; ringBytes: number; collectives: number } {
  const cap = shard === "gradients" || shard === "parameters" ? bucketCapBytes(shard, bucketMB) : null;
  const units = cap === null ? [] : shardBuckets(trainableLayerBytes(model), cap).map((b) => b.bytes);
  // Sharded: the reduce-scatter carries the gradient (16-bit when compressed), the all-gather the weights in float32.
  // ZeRO-3 gathers every bucket for its forward and (but the last, kept) again for its backward pass.
  const wireBytes = price.wireBytes;
  const ringBytes =
    shard === "parameters"
      ? (2 * gradientBytes - (units[units.length - 1] ?? 0) + wireBytes) / 2
      : shard
        ? (wireBytes + gradientBytes) / 2
        : wireBytes;
  // Each all-gather and reduce-scatter is half an all-reduce's hops: ZeRO-3 makes three per bucket (less the last's second gather), ZeRO-2 two, and the flags'.
  const collectives =
    shard === "parameters"
      ? (3 * units.length - 1) / 2 + 1
      : shard === "gradients"
        ? units.length + 1
        : shard
          ? 2
          : price.allReduces;
  return { cap, units, ringBytes, collectives };
}

/**
 * ZeRO-2/3's buckets where bucketMB is not given: the stage's default, or one layer a bucket
 * where only that fits the tightest worker's memory (as auto chooses), saying why.
 */
function fittedBuckets(
  given: DataOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  batchSize: number | undefined,
  options: PlanOptions,
  carriedBytes: number,
  overlap: boolean,
): { bucketMB?: number; why?: string } {
  const shard = given.shard;
  if (given.bucketMB !== undefined) return { bucketMB: given.bucketMB };
  const room = Math.min(...workerRoom(options, spec));
  if ((shard !== "gradients" && shard !== "parameters") || room === Infinity) return {};
  const n = workerCount(spec);
  const need = (bucketMB?: number): number =>
    memoryTotal(
      replicaMemory(model, n, batchSize, options, shard, carriedBytes, bucketCapBytes(shard, bucketMB), overlap),
    );
  const [buckets, single] = [need(), need(0)];
  if (buckets <= room || single > room) return {};
  return {
    bucketMB: 0,
    why: `its default buckets would need ${formatBytes(buckets)} per worker, above the ${formatBytes(room)} a worker may use`,
  };
}

/** What each of `n` replicas holds: the model's share as `shard` divides it, and what its comm hook carries between steps (counted with the gradient). */
function replicaMemory(
  model: ModelSummary,
  n: number,
  batchSize: number | undefined,
  o: Pick<PlanOptions, "optimizer" | "nativeMemory">,
  shard: DataParallelPlan["shard"],
  carriedBytes: number,
  capBytes: number,
  overlap: boolean,
): MemoryEstimate {
  const optimizer = o.optimizer;
  const sharded = shardedMemory(
    estimateReplicaMemory(model, {
      batchSize: batchSize === undefined ? undefined : Math.ceil(batchSize / n),
      optimizer,
      native: o.nativeMemory,
    }),
    shard,
    n,
    largestBucketBytes(model, capBytes),
    optimizer,
    overlap,
  );
  return carriedBytes > 0 ? { ...sharded, gradientBytes: sharded.gradientBytes + carriedBytes } : sharded;
}

/** Whether some worker's memory (its device's, under the cluster's cap) holds the whole model's training state at the whole batch: else no one worker is a plan to compare with. */
function oneWorkerHolds(
  model: ModelSummary,
  batchSize: number | undefined,
  options: PlanOptions,
  spec: ClusterSpec,
): boolean {
  const need = memoryTotal(
    estimateReplicaMemory(model, { batchSize, optimizer: options.optimizer, native: options.nativeMemory }),
  );
  return need <= Math.max(...workerRoom(options, spec));
}

/** Each worker's memory: its device's, under the cluster's cap (Infinity where neither is known). */
function workerRoom(options: PlanOptions, spec: ClusterSpec): number[] {
  return Array.from({ length: workerCount(spec) }, (_, rank) =>
    Math.min(options.devices?.[rank]?.memoryBytes || Infinity, spec.memoryCapBytes ?? Infinity),
  );
}
