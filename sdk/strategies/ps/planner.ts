import { planSplits, replicaSlices } from "../../plan/batches";
import { estimateReplicaMemory, formatBytes } from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import { serverCount, slowdownOf, workerCount, type ClusterSpec } from "../../config/cluster-spec";
import { checkBatch } from "../data/planner";
import { slowdownLines } from "../data/plan-text";
import { compressionLine } from "../data/hook-prices";
import type { PlanOptions, PsPlan, ShardVariable } from "../../plan/plans";
import type { PsOptions } from "./options";
import { speedsOf } from "../../plan/speeds";
import { sampleBytes, type Prediction } from "../../plan/predict";
import { predictPs } from "../../plan/predict-ps";

/**
 * Splits the variables among `servers` so each holds about the same bytes: largest first, each
 * to the server holding least so far (LPT; within 4/3 of the best possible split). Each server
 * keeps its variables in model order. `load` (bytes each server holds already) is updated.
 */
export function shardByBytes(
  variables: ModelSummary["variables"],
  servers: number,
  load: number[] = new Array<number>(servers).fill(0),
): ShardVariable[][] {
  const vars = variables.map((v, index) => ({
    index,
    name: v.name,
    layer: v.layer,
    shape: [...v.shape],
    bytes: 4 * v.shape.reduce((a, d) => a * d, 1),
  }));
  const order = [...vars].sort((a, b) => b.bytes - a.bytes || a.index - b.index);
  const shards: ShardVariable[][] = Array.from({ length: servers }, () => []);
  for (const v of order) {
    let best = 0;
    for (let s = 1; s < servers; s++) if (load[s]! < load[best]!) best = s;
    shards[best]!.push(v);
    load[best]! += v.bytes;
  }
  return shards.map((s) => s.sort((a, b) => a.index - b.index));
}

export function planParameterServers(
  given: PsOptions,
  spec: ClusterSpec,
  model: ModelSummary,
  options: PlanOptions = {},
): PsPlan {
  const mode = given.mode;
  const n = workerCount(spec);
  const { batchSize } = options;
  if (batchSize !== undefined) checkBatch(batchSize, n);
  const count = Math.max(1, serverCount(spec));
  const load = new Array<number>(count).fill(0);
  const shards = shardByBytes(model.variables, count, load);
  // State (moving statistics) after the trainable variables, onto whichever servers hold least.
  const state = shardByBytes(model.state, count, load);
  return Object.freeze({
    strategy: "ps" as const,
    mode,
    staleness: given.staleness ?? null,
    worldSize: n,
    replicas: n,
    servers: Object.freeze(
      shards.map((variables, index) =>
        Object.freeze({
          index,
          variables: Object.freeze(variables),
          state: Object.freeze(state[index]!),
          bytes: load[index]!,
        }),
      ),
    ),
    workers: Object.freeze(
      Array.from({ length: n }, (_, rank) =>
        Object.freeze({ rank, slowdown: slowdownOf(spec, rank), layers: "all" as const, params: model.paramCount }),
      ),
    ),
    model,
    gradientBytes: model.trainableParamCount * 4,
    compression: given.compression ?? null,
    elastic: given.elastic ? Object.freeze({ ...given.elastic }) : null,
    batch:
      batchSize === undefined
        ? null
        : Object.freeze({
            globalBatch: batchSize,
            perReplica: Object.freeze(replicaSlices(batchSize, n)),
            splits: planSplits(batchSize, options.datasetSize, n),
          }),
    memory: Object.freeze(
      estimateReplicaMemory(model, {
        batchSize: batchSize === undefined ? undefined : Math.ceil(batchSize / n),
        optimizer: options.optimizer,
        native: options.nativeMemory,
      }),
    ),
    devices: options.devices ? Object.freeze(options.devices.map((d) => Object.freeze({ ...d }))) : null,
    prediction: psPrediction(mode, model, options, n, load, given.compression ?? null),
    reasons: Object.freeze([...(options.reasons ?? [])]),
  });
}

/** From the workers' speeds and every server's link, where all were measured (no prediction is better than an invented one). */
function psPrediction(
  mode: "sync" | "async",
  model: ModelSummary,
  options: PlanOptions,
  n: number,
  load: readonly number[],
  compression: string | null,
): Prediction | null {
  const speeds = speedsOf(options.devices);
  const sd = options.serverDevices ?? [];
  const total = load.reduce((a, b) => a + b, 0);
  if (
    !speeds ||
    options.batchSize === undefined ||
    sd.length !== load.length ||
    total === 0 ||
    sd.some((d) => !(d.linkBytesPerSecond! > 0) || d.linkLatencyMs === undefined)
  )
    return null;
  const servers = sd.map((d, j) => ({
    share: load[j]! / total,
    linkBytesPerSecond: d.linkBytesPerSecond!,
    latencySeconds: d.linkLatencyMs! / 1000,
  }));
  // Pulls carry the parameters and state; pushes the gradient (16-bit when compressed) and the state's change.
  const stateBytes = total - model.trainableParamCount * 4;
  const grad = model.trainableParamCount * 4 * (compression ? 0.5 : 1);
  const feedBytes = options.batchSize * sampleBytes(model);
  return predictPs(
    {
      mode,
      flopsPerSample: model.flopsPerSample,
      layers: model.layers.length,
      pullBytes: total,
      pushBytes: grad + stateBytes,
      globalBatch: options.batchSize,
      replicas: n,
      feedBytes,
      ...(options.profile ? { profile: options.profile } : {}),
    },
    speeds,
    servers,
    { workers: options.devices ?? [], servers: sd, ...(options.driver ? { driver: options.driver } : {}) },
  );
}

function modeLine(plan: PsPlan): string {
  if (plan.mode === "sync")
    return "sync: every step the servers wait for one push from each worker, sum them and apply one update";
  const bound =
    plan.staleness === null
      ? "no staleness bound"
      : `a worker runs at most ${plan.staleness} step(s) ahead of the slowest (stale-synchronous parallel)`;
  return `async: each push is applied when it arrives; workers never wait for each other; ${bound}`;
}

export function formatPsPlan(plan: PsPlan): string {
  const lines = [
    `parameter-server plan: ${plan.worldSize} worker(s), ${plan.servers.length} server(s), ${plan.mode}`,
    `model "${plan.model.name}": ${plan.model.layers.length} layers, ${plan.model.paramCount.toLocaleString("en-US")} parameters, ${formatBytes(plan.gradientBytes)} pulled and ${plan.compression ? `${formatBytes(plan.gradientBytes / 2)} (${plan.compression}, error feedback)` : formatBytes(plan.gradientBytes)} pushed per worker step`,
    modeLine(plan),
    ...(plan.elastic ? [elasticPsLine(plan.elastic.minWorkers)] : []),
  ];
  if (plan.batch)
    lines.push(
      `global batch ${plan.batch.globalBatch} = ${plan.worldSize} x ${plan.batch.perReplica[0]} per worker${plan.mode === "async" ? " (in async mode each slice is its own update)" : ""}`,
    );
  lines.push("server  bytes       variables");
  for (const s of plan.servers)
    lines.push(
      `${String(s.index).padEnd(8)}${formatBytes(s.bytes).padEnd(12)}${[...s.variables, ...s.state].map((v) => v.name).join(", ")}`,
    );
  lines.push(...slowdownLines(plan.workers));
  lines.push("data: the driver hands each worker its slices; workers pull from and push to the servers directly");
  const p = plan.prediction;
  if (p)
    lines.push(
      `predicted ${p.samplesPerSecond.toFixed(0)} samples/s (${p.computeMs.toFixed(1)} ms a worker's step, ${p.commMs.toFixed(1)} ms pulling and pushing a global step), from ${p.basis}`,
    );
  return lines.join("\n");
}

function elasticPsLine(minWorkers: number): string {
  return `elastic: a lost worker's slice of the step it was lost in is computed by another worker on the same parameters and pushed as its own, then each step is split among the rest, while at least ${minWorkers} remain`;
}

export function explainPsPlan(plan: PsPlan): string {
  const sizes = plan.servers.map((s) => formatBytes(s.bytes));
  const lines = [
    ...plan.reasons,
    `${plan.servers.length} server(s) hold the ${plan.model.variables.length} trainable variables, split by bytes (largest first, each to the least loaded server): ${sizes.join(" / ")}`,
    ...(plan.model.state.length > 0
      ? [
          `the ${plan.model.state.length} non-trainable weights (moving statistics) are held by servers too: each sync step they take the mean of the workers' changes; async servers add each push's change as it arrives`,
        ]
      : []),
    `every worker holds the whole model; each step it pulls the parameters (${formatBytes(plan.gradientBytes)}), computes a gradient on its slice and pushes it back; the servers apply the optimizer`,
    modeLine(plan),
    ...(plan.elastic ? [elasticPsLine(plan.elastic.minWorkers)] : []),
    ...(plan.compression ? [compressionLine(plan.compression)] : []),
    ...slowdownLines(plan.workers),
  ];
  return lines.join("\n");
}
