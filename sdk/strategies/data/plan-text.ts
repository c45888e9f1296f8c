import { EVICT_FLOOR_MS, WARM_UP_STEPS } from "./evict-slow";
import { formatBytes, largestLayerBytes, memoryTotal } from "../../plan/memory";
import type { DataParallelPlan } from "../../plan/plans";
import { predictedSlowerThanOne } from "../../plan/slower-than-one";
import { hookPrice } from "./hook-prices";
import { overlapLine } from "./overlap-lines";

// A data-parallel plan as text: toString()'s lines and explain()'s reasons, from the plan's data alone.

function kib(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(2)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** Who takes a lost worker's place: a spare, a new worker, or nobody (no line). */
function replaceLines(e: NonNullable<DataParallelPlan["elastic"]>): string[] {
  const spares = `${e.spares} spare(s), started with the cluster and idle, take the places of the first ${e.spares} worker(s) lost, with no start-up`;
  const fresh = "a new local worker (after join(): the next that joins) is started";
  if (e.spares > 0)
    return [
      `replace: ${spares}${e.replace ? `; after them, for each worker lost ${fresh}` : "; after them the fit goes on with fewer"}; each joins at a step boundary`,
    ];
  return e.replace ? [`replace: for each worker lost ${fresh}, which joins at a step boundary`] : [];
}

/**
 * Eviction, and when it pays: with n replicas one k times slower holds every step to k x t / n;
 * without it the others take t / (n - 1), faster once k > n / (n - 1), before the replacement's join.
 */
function evictLine(e: { slowerThan: number; steps: number }, n: number): string {
  const pays =
    n > 1
      ? `; on ${n} workers going on without it is faster once it is more than ${(n / (n - 1)).toFixed(2)}x slower, a replacement faster still after its join (one copy of the weights)`
      : "";
  return `evict: a worker whose compute takes more than ${e.slowerThan}x the others' median (and ${EVICT_FLOOR_MS} ms more) for ${e.steps} steps in a row is let go as if lost, its first ${WARM_UP_STEPS} steps after joining not counted${pays}`;
}

/** An elastic sharded fit's line: a loss costs the steps since the last checkpoint. */
function elasticShardLine(minWorkers: number): string {
  return `elastic, sharded: a lost worker takes its part of the optimizer state with it, so the others (at least ${minWorkers}) go back to the fit's last checkpoint, re-sharded over them, and run the steps since again; workers added with cluster.add() join at a step boundary, every part re-sharded over all`;
}

/** A data-parallel plan as text: ring, slices, bytes per step, memory and the prediction. */
export function formatDataPlan(plan: DataParallelPlan): string {
  const ring = plan.worldSize > 1 ? `ring ${[...plan.ring, plan.ring[0]].join(" -> ")}` : "no all-reduce (one worker)";
  const model = `model "${plan.model.name}": ${plan.model.layers.length} layers, ${plan.model.paramCount.toLocaleString("en-US")} parameters`;
  const lines = [
    `data-parallel plan: ${plan.worldSize} worker(s), ${plan.replicas} replica(s), ${ring}`,
    ...(plan.ringNote ? [plan.ringNote] : []),
    `${model}, ${kib(plan.gradientBytes)} of float32 gradients per step`,
    ...(plan.batch
      ? [`global batch ${plan.batch.globalBatch} = ${plan.replicas} x ${plan.batch.perReplica[0]} per replica`]
      : []),
    plan.feed === "driver"
      ? "data: the driver sends each replica its slice of every step"
      : "data: each worker loads the dataset and reads its own slices",
    ...gpuLines(plan),
    "rank  replica  ring pos  holds       batch slice",
    ...plan.workers.map((w) => {
      const slice = plan.batch ? String(plan.batch.perReplica[w.replica]) : "-";
      return `${String(w.rank).padEnd(6)}${String(w.replica).padEnd(9)}${String(w.ringPosition).padEnd(10)}all layers  ${slice}`;
    }),
    ...(plan.worldSize > 1 ? [allReduceLine(plan)] : []),
    ...(plan.sync ? [syncLine(plan.sync)] : []),
    ...(plan.shard && plan.replicas > 1 ? [shardLine(plan, plan.replicas)] : []),
    memoryLine(plan),
    ...slowdownLines(plan.workers),
    ...(plan.elastic ? [elasticLine(plan, plan.elastic.minWorkers)] : []),
    ...(plan.elastic ? replaceLines(plan.elastic) : []),
    ...(plan.elastic?.evict ? [evictLine(plan.elastic.evict, plan.replicas)] : []),
    ...(plan.prediction ? [predictionLine(plan, plan.prediction)] : []),
  ];
  return lines.join("\n");
}

/** GPU workers, and what reading each step's gradient back costs them. */
function gpuLines(plan: DataParallelPlan): string[] {
  const gpus = (plan.devices ?? []).map((d, rank) => ({ d, rank })).filter(({ d }) => d.gpu);
  if (gpus.length === 0) return [];
  const rate = Math.min(...gpus.map(({ d }) => d.deviceBytesPerSecond ?? Infinity));
  const each = Number.isFinite(rate)
    ? `, about ${((2 * plan.gradientBytes * 1000) / rate).toFixed(1)} ms at the ${(rate / 1e9).toFixed(2)} GB/s measured`
    : "";
  const names = gpus.map(({ d, rank }) => `rank ${rank} ${d.gpu!.name}${d.gpu!.software ? " (software GPU)" : ""}`);
  return [`GPU workers: ${names.join(", ")}; each step reads its gradient back and uploads the sum once${each}`];
}

function allReduceLine(plan: DataParallelPlan): string {
  const wireName = hookPrice(plan.hook, plan.model).wireName;
  const wire = wireName ? `, gradients as ${wireName}` : "";
  const averaged = plan.sync ? " (averaged over a sync's steps)" : "";
  const when = plan.overlap.on
    ? "in buckets during the backward pass"
    : plan.overlap.timed
      ? "after the backward pass, or in buckets during it if the fit's first steps time that faster"
      : plan.shard === "parameters" || plan.shard === "gradients"
        ? "a bucket of layers at a time, between the layers' passes"
        : "after the backward pass";
  return `all-reduce: ring (reduce-scatter + all-gather)${wire}; each rank sends ${kib(plan.allReduce.bytesSentPerRank)} per step${averaged}; ${when}`;
}

function memoryLine(plan: DataParallelPlan): string {
  const m = plan.memory;
  const carried = plan.hook
    ? ` (with ${plan.hook.kind === "powersgd" ? "PowerSGD's error and factors" : "their rounding error"}, carried between steps)`
    : "";
  const parts = [`parameters ${formatBytes(m.paramsBytes)}`, `gradients ${formatBytes(m.gradientBytes)}${carried}`];
  if (m.optimizerBytes !== null) parts.push(`optimizer state ${formatBytes(m.optimizerBytes)}`);
  if (m.activationBytes !== null) parts.push(`activations ${formatBytes(m.activationBytes)}`);
  parts.push(`the runtime's own growth ${formatBytes(m.runtimeGrowthBytes)}`);
  return `memory per replica (estimate): ${parts.join(", ")}`;
}

function elasticLine(plan: DataParallelPlan, minWorkers: number): string {
  if (plan.sync) return elasticSyncLine(minWorkers);
  if (plan.shard) return elasticShardLine(minWorkers);
  return `elastic: a lost worker's slice goes to the others while at least ${minWorkers} remain; workers added with cluster.add() join at a step boundary`;
}

function predictionLine(plan: DataParallelPlan, p: NonNullable<DataParallelPlan["prediction"]>): string {
  const slower =
    p.oneWorker &&
    predictedSlowerThanOne({
      workers: plan.worldSize,
      gradientBytes: plan.gradientBytes,
      prediction: p,
      one: p.oneWorker,
    })
      ? `: SLOWER than one worker (${p.oneWorker.samplesPerSecond.toFixed(0)} samples/s); explain() says why`
      : "";
  return `predicted: ${p.stepMs.toFixed(1)} ms per step, ${p.samplesPerSecond.toFixed(0)} samples/s${slower}`;
}

export function explainDataPlan(plan: DataParallelPlan): string {
  const m = plan.memory;
  const n = plan.worldSize;
  const total = memoryTotal(m);
  const slice = plan.batch ? `${plan.batch.perReplica[0]} samples` : "its slice";
  const lines = [
    ...plan.reasons,
    `${holdsLine(plan, n)}: ${formatBytes(total)} per replica (estimate${m.activationBytes === null ? ", without activations: no batch size given" : ""})`,
    n > 1
      ? `each step every replica computes gradients on ${slice} and ${plan.shard ? `ring reduce-scatters sum ${formatBytes(plan.gradientBytes)} of gradients, each replica keeping the sum of its part, and all-gathers bring it the weights it does not update` : `a ring all-reduce sums ${formatBytes(plan.gradientBytes)} of gradients`}; each rank sends 2(N-1)/N of that${sixteenBits(plan) ? ", halved" : ""}${plan.shard === "parameters" ? ", and half as much again: each bucket's weights are gathered for the forward and again for the backward pass" : ""}`
      : "one worker: no all-reduce",
    ...(n > 1 ? hookLines(plan) : []),
    ...(plan.ringNote ? [plan.ringNote] : []),
    ...(n > 1 ? [overlapLine(plan.overlap)] : []),
    ...(plan.sync && n > 1
      ? [
          `${syncLine(plan.sync)}; the replicas differ between syncs and each keeps its own inner optimizer state, a copy of the last sync's weights and the outer optimizer's state (${formatBytes(plan.gradientBytes)} more per replica, and more for a stateful outer optimizer); fewer syncs send fewer bytes, and learn less per step as the replicas drift apart`,
        ]
      : []),
    ...(plan.batchNorm === "sync"
      ? [
          `batchNorm "sync": every BatchNormalization layer normalizes with the global batch's mean and variance (${plan.model.layers.filter((l) => l.className === "BatchNormalization").length} layer(s)), all-reduced twice per layer in the forward pass and once back, as one process at the global batch`,
        ]
      : []),
  ];
  lines.push(...slowdownLines(plan.workers));
  if (plan.prediction) {
    const p = plan.prediction;
    lines.push(
      `predicted step ${p.stepMs.toFixed(1)} ms (${p.computeMs.toFixed(1)} ms forward and backward, ${p.commMs.toFixed(1)} ms all-reduce), ${p.samplesPerSecond.toFixed(0)} samples/s, from ${p.basis}`,
    );
    const slower = p.oneWorker
      ? predictedSlowerThanOne({ workers: n, gradientBytes: plan.gradientBytes, prediction: p, one: p.oneWorker })
      : null;
    if (slower) lines.push(slower);
  }
  return lines.join("\n");
}

/** ZeRO-1, -2 or -3 in one line: what each replica keeps, how the step moves the bytes, and when it saves nothing over ZeRO-1. */
function shardLine(plan: DataParallelPlan, n: number): string {
  const state = plan.memory.optimizerBytes;
  // What ZeRO-1 would hold (the whole weights and gradient, the same share of the optimizer's state), and whether this stage holds less.
  const m = plan.memory;
  const sixteen = sixteenBits(plan);
  const one =
    plan.model.paramCount * 4 +
    plan.gradientBytes * (sixteen ? 2 : 1) +
    (m.optimizerBytes ?? 0) +
    (m.activationBytes ?? 0) +
    m.runtimeGrowthBytes;
  const half = sixteen ? ` (the reduce-scatters in ${sixteen})` : "";
  const total = memoryTotal(m);
  const b = plan.buckets;
  const byBucket = b !== null && b.largestBytes > largestLayerBytes(plan.model);
  const whole = !byBucket
    ? "the largest layer is most of the model"
    : b.count === 1
      ? "its one bucket holds the whole gradient"
      : "its largest bucket of layers is most of the model";
  const worth =
    plan.shard !== "optimizer" && total >= 0.9 * one
      ? `; here that is no less than shard "optimizer" (ZeRO-1) would hold (${formatBytes(total)} against ${formatBytes(one)}): ${whole}, so holding it whole costs what sharding the rest saves${byBucket ? " (a smaller bucketMB holds less, in more collectives)" : ""}`
      : "";
  const buckets = b ? bucketsText(b, plan.model.layers.filter((l) => l.trainableParams > 0).length) : "";
  if (plan.shard === "gradients") {
    return `shard "gradients" (ZeRO-2): each replica keeps the whole weights and 1/${n} of every layer's gradient and optimizer state (${formatBytes(plan.gradientBytes / n)} of ${formatBytes(plan.gradientBytes)} of gradient); ${buckets}, each bucket's gradient reduce-scattered as the backward pass writes it, the optimizer updates each replica's part, and every bucket's new weights are all-gathered: ${sixteen ? "0.75x float32" : "plain"} data parallelism's bytes${half}, in two collectives per bucket${worth}`;
  }
  if (plan.shard === "parameters") {
    return `shard "parameters" (ZeRO-3): each replica keeps 1/${n} of every layer's weights, gradient and optimizer state (${formatBytes(plan.gradientBytes / n)} of ${formatBytes(plan.gradientBytes)} weights); ${buckets}, each bucket's weights all-gathered before its forward pass and again before its backward pass (the last bucket's stay), its gradient reduce-scattered right after, one bucket at a time: ${sixteen ? "1.25x" : "1.5x"} float32 data parallelism's bytes${half}, and the largest bucket (${formatBytes(b?.largestBytes ?? 0)}) held whole twice (weights and gradient) while it runs; a replica loads in parts, sent only its 1/${n} of the trained weights, so none holds the whole model even then${worth}`;
  }
  const held =
    state === null
      ? "its shard's optimizer state"
      : `its shard's optimizer state (${formatBytes(state)} of ${formatBytes(state * n)})`;
  return `shard "optimizer" (ZeRO-1): each replica keeps ${held}: the gradient is reduce-scattered, each replica updates its 1/${n} of the parameters, and the weights are all-gathered (float32), then a small all-reduce agrees on skipped steps`;
}

/** Elastic local SGD: the survivors of a loss go back to the last sync, as its state is the last all of them share. */
function elasticSyncLine(minWorkers: number): string {
  return `elastic: after a loss the others go back to the last sync (each keeps the last two: weights, model state and both optimizers' state) and run the steps since again, the lost worker's slices shared among them, while at least ${minWorkers} remain; workers added with cluster.add() join right after a sync`;
}

/** Local SGD / DiLoCo in one line: how often, and which outer optimizer. */
function syncLine(sync: NonNullable<DataParallelPlan["sync"]>): string {
  const o = sync.outer;
  const outer =
    o.name === "momentum"
      ? `${o.useNesterov ? "Nesterov " : ""}momentum ${o.momentum}, learning rate ${o.learningRate}`
      : `${o.name}, learning rate ${o.learningRate}`;
  return `sync every ${sync.every} step(s) and at each epoch's end: each replica steps alone with the model's optimizer, then the replicas all-reduce how far their weights moved and the outer optimizer (${outer}) applies that mean change`;
}

/** The 16-bit format the gradient travels in, if it does (ZeRO reduce-scatters in it). */
function sixteenBits(plan: DataParallelPlan): "fp16" | "bf16" | null {
  return plan.hook && plan.hook.kind !== "powersgd" ? plan.hook.kind : null;
}

/** What the plan's comm hook says of itself in explain(). */
function hookLines(plan: DataParallelPlan): string[] {
  const line = hookPrice(plan.hook, plan.model).line;
  return line ? [line] : [];
}

/** Stragglers made on purpose, said plainly wherever a plan is shown. */
export function slowdownLines(workers: ReadonlyArray<{ rank: number; slowdown: number }>): string[] {
  return workers
    .filter((w) => w.slowdown > 1)
    .map(
      (w) =>
        `rank ${w.rank} is slowed down ${w.slowdown}x on purpose: after computing each step it waits ${(w.slowdown - 1).toFixed(1)}x the time that took`,
    );
}

/** What each worker holds, as the plan's shard stage divides the model. */
function holdsLine(plan: DataParallelPlan, n: number): string {
  if (!plan.shard || n < 2) return `every one of the ${n} workers holds the whole model`;
  if (plan.shard === "parameters")
    return `each of the ${n} workers holds 1/${n} of the model's weights, gradient and optimizer state, and a bucket of layers whole while it runs`;
  return `every one of the ${n} workers holds the whole weights and 1/${n} of ${plan.shard === "gradients" ? "the gradient and " : ""}the optimizer's state`;
}

/** How ZeRO-2/3 group the layers: each a bucket of its own, or how many buckets of up to what. */
function bucketsText(b: NonNullable<DataParallelPlan["buckets"]>, layers: number): string {
  const mb = +(b.capBytes / 1024 / 1024).toFixed(3);
  if (b.count === layers)
    return `each of its ${layers} layer(s) a bucket of its own (bucketMB ${mb}${b.why ? `: ${b.why}` : mb > 0 ? ": no two fit in one" : ""})`;
  if (b.count === 1) return `all ${layers} layers in one bucket (bucketMB ${mb}: ${formatBytes(b.largestBytes)})`;
  return `its ${layers} layers in ${b.count} buckets of consecutive layers (bucketMB ${mb}; the largest ${formatBytes(b.largestBytes)})`;
}
