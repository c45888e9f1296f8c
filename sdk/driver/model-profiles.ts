import type { CommHookSpec } from "../protocol/comm-hook-spec";
import type { GradientSumSpec } from "../protocol/gradient-sum-spec";
import * as tf from "@tensorflow/tfjs";
import type { Heads, LossName } from "../protocol/loss-names";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { profileBatches, type ModelProfile } from "../plan/profile";
import { MeshtrainError, StateError, WorkerLostError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { WorkerHandle } from "../members/worker-handle";
import { median } from "../util/median";
import { topologyOf } from "../model/topology";

/** A worker's connection closing during the profile is its exit's echo: how long to wait for the exit itself. */
const LOSS_WAIT_MS = 1000;

/** Layer classes TF.js registered when meshtrain loaded it: the built-ins, before any user's own. */
const BUILT_IN = new Set(Object.keys(tf.serialization.SerializationMap.getMap().classNameMap));

/** How long the workers sharing a machine step at once to measure how they slow each other. */
const SHARED_MS = 300;
/**
 * Rounds of alone-then-together, whose ratios' median counts: on a shared VM one worker's
 * speed drifted by half between windows a second apart, and a single 600 ms pair of windows
 * put the same slowdown anywhere from 1.00x to 1.87x in eight launches.
 */
const SHARED_ROUNDS = 3;

/** Timing a model is a few of its steps; a model that takes longer than this is planned from FLOPs. */
const PROFILE_TIMEOUT_MS = 60_000;

/** A fit's profile may take this long, or a tenth of the epoch the plan predicts from FLOPs if more (bounded by the whole fit). */
const MIN_BUDGET_MS = 1000;

/** What a fit's profile times (every layer as well as the replica step, or the step alone), and for how long. */
export interface ProfileRequest {
  layers: boolean;
  budgetMs?: number;
  /** The plan's comm hook: its own work is timed too, where it has a probe (PowerSGD's). */
  hook?: CommHookSpec;
  /** The plan's summing scheme: its own work is timed too, where it has a probe (a local-SGD sync's). */
  sum?: GradientSumSpec;
}

/** What a plan's options time on a worker beside its replica step (each option's own work). */
export type ProfileProbes = Pick<ProfileRequest, "hook" | "sum">;

/** What the profile was asked to probe, with the times the worker took (kept with the profile, so a fit asking the same finds it). */
function probed(
  request: ProfileRequest,
  m: { hookMs?: number | undefined; sumMs?: number | undefined },
): Pick<ModelProfile, "hook" | "sum"> {
  return {
    ...(request.hook ? { hook: { spec: request.hook, ...(m.hookMs !== undefined ? { ms: m.hookMs } : {}) } } : {}),
    ...(request.sum ? { sum: { spec: request.sum, ...(m.sumMs !== undefined ? { ms: m.sumMs } : {}) } } : {}),
  };
}

/**
 * A profile's budget: a tenth of one epoch as `plan` predicts it, or a second, whichever is more;
 * but never more than the whole fit is predicted to take, which is all a profile could save. A
 * fit of a few small steps (a quick try in a notebook) was timed for a second before steps
 * that took a tenth of it; planned from FLOPs alone (no prediction), a second.
 */
export function profileBudgetMs(
  plan: { prediction?: { stepMs: number } | null },
  datasetSize: number,
  batchSize: number,
  epochs: number,
): number {
  const stepMs = plan.prediction?.stepMs;
  if (stepMs === undefined || !(stepMs > 0)) return MIN_BUDGET_MS;
  const epochMs = stepMs * Math.ceil(datasetSize / batchSize);
  return Math.round(Math.min(Math.max(MIN_BUDGET_MS, epochMs / 10), epochMs * epochs));
}

/**
 * The models this cluster has timed on a worker, by topology and batch: plan() and fit() predict
 * from them. They are timed on the slowest worker (by its matrix speed at join), since a
 * synchronous step waits for the slowest.
 */
export class ModelProfiles {
  private readonly kept = new Map<string, ModelProfile>();

  /** A profile already taken for this model and batch, if any (one with the layers timed first). */
  find(model: tf.LayersModel, batchSize: number | undefined): ModelProfile | undefined {
    if (batchSize === undefined) return undefined;
    const topology = topologyOf(model);
    return this.kept.get(key(topology, batchSize, true)) ?? this.kept.get(key(topology, batchSize, false));
  }

  /**
   * The profile a fit's plan predicts from. A model the workers cannot time (its replica step
   * fails on random data, or it would not fit one worker) is planned from its FLOPs, and the
   * driver says why; so is a model with layers of the user's own classes, whose code (it may
   * print, count its calls or fail) runs only when the user trains. A worker lost meanwhile
   * fails the fit as it would during a step, with the cause `lossWithin` reports.
   */
  async forFit(
    handles: readonly WorkerHandle[],
    model: tf.LayersModel,
    o: { batchSize: number; loss: LossName; optimizer: OptimizerSpec },
    request: ProfileRequest,
    lossWithin: (ms: number) => Promise<MeshtrainError | undefined>,
  ): Promise<ModelProfile | undefined> {
    if (model.layers.some((l) => !BUILT_IN.has(l.getClassName()))) return undefined;
    // A software GPU computes a step in seconds and its speed says nothing of a real GPU's: timing it would cost more than the fit.
    const soft = handles.find((h) => h.info?.gpu?.software);
    if (soft) {
      process.stderr.write(
        `meshtrain: the plan predicts from the model's FLOPs: rank ${soft.rank} runs on a software GPU (${soft.info!.gpu!.name}), not worth timing\n`,
      );
      return undefined;
    }
    try {
      return await this.take(handles, model, o, request);
    } catch (err) {
      const lost = await lossWithin(LOSS_WAIT_MS);
      if (lost) throw lost;
      if (err instanceof WorkerLostError) throw err;
      process.stderr.write(
        `meshtrain: the plan predicts from the model's FLOPs: timing it on a worker failed: ${err instanceof MeshtrainError ? err.summary : String(err)}\n`,
      );
      return undefined;
    }
  }

  /**
   * Times the model on the slowest worker at the batch and an eighth of it (once per model and
   * batch): its replica step, and its layers unless the request leaves them out; within the
   * request's budget where it has one (beyond it, timings run once and fewer sharing rounds run).
   */
  async take(
    handles: readonly WorkerHandle[],
    model: tf.LayersModel,
    o: { batchSize: number; loss: LossName; heads?: Heads | undefined; optimizer: OptimizerSpec },
    request: ProfileRequest = { layers: true },
  ): Promise<ModelProfile> {
    const topology = topologyOf(model);
    const had =
      this.kept.get(key(topology, o.batchSize, true)) ??
      (request.layers ? undefined : this.kept.get(key(topology, o.batchSize, false)));
    if (had && probesMatch(had, request)) return had;
    const slowest = [...handles].sort((a, b) => (a.info?.gflops ?? 0) - (b.info?.gflops ?? 0))[0];
    if (!slowest) throw new StateError("the cluster has no worker to time the model on");
    const batches = profileBatches(o.batchSize);
    const started = performance.now();
    const base = {
      type: "profile" as const,
      topology,
      optimizer: o.optimizer,
      loss: o.loss,
      ...(o.heads ? { heads: o.heads } : {}),
      batches,
    };
    const r = await slowest.channel.request(
      {
        ...base,
        ...(request.budgetMs !== undefined ? { budgetMs: request.budgetMs } : {}),
        ...(request.layers ? {} : { layers: false }),
        ...(request.hook ? { hook: request.hook } : {}),
        ...(request.sum ? { sum: request.sum } : {}),
      },
      "profiled",
      {
        timeoutMs: PROFILE_TIMEOUT_MS,
        waitingFor: request.layers ? "the model's layer and step times" : "the model's step times",
      },
    );
    const m = r.msg;
    const left = request.budgetMs === undefined ? Infinity : request.budgetMs - (performance.now() - started);
    // A step too big for the worker was not timed (its layers were): nor can it be timed beside the others.
    if (m.replicaStepMs.length === 0)
      process.stderr.write(
        `meshtrain: the plan predicts a replica's step from its layers' times: its whole step was ${m.replicaStep.why ?? "not timed"}\n`,
      );
    const sharing =
      m.replicaStepMs.length === 0
        ? undefined
        : await sharedSlowdown(handles, base, roundsWithin(left, m.replicaStepMs[0]!));
    const profile: ModelProfile = Object.freeze({
      batches: m.batches,
      layers: m.layers,
      replicaStepMs: m.replicaStepMs,
      replicaStep: m.replicaStep,
      timedOn: `rank ${slowest.rank} (${slowest.info?.backend ?? "?"})`,
      ...(sharing ? { sharing } : {}),
      ...probed(request, m),
    });
    this.kept.set(key(topology, o.batchSize, request.layers), profile);
    return profile;
  }
}

/** Whether a kept profile timed the comm hook and summing scheme the request asks about, if any. */
function probesMatch(had: ModelProfile, request: ProfileRequest): boolean {
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  return (
    (request.hook === undefined || same(had.hook?.spec, request.hook)) &&
    (request.sum === undefined || same(had.sum?.spec, request.sum))
  );
}

/**
 * How much the most crowded machine's workers slow each other when they all compute at once
 * (cores, memory bandwidth and their own communication threads shared): one of them steps for
 * SHARED_MS alone, then all of them at once, and their mean step is set against its own; the
 * median over SHARED_ROUNDS such pairs, each close enough in time to meet the machine alike.
 * Undefined where every worker has a machine of its own.
 */
async function sharedSlowdown(
  handles: readonly WorkerHandle[],
  msg: Omit<MessageOf<"profile">, "v" | "id">,
  rounds: number,
): Promise<ModelProfile["sharing"]> {
  const byHost = new Map<string, WorkerHandle[]>();
  for (const h of handles) if (h.info) byHost.set(h.info.hostname, [...(byHost.get(h.info.hostname) ?? []), h]);
  const crowded = [...byHost.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  if (crowded.length < 2) return undefined;
  const time = (h: WorkerHandle, beside: string): Promise<number> =>
    h.channel
      .request({ ...msg, sharedForMs: SHARED_MS }, "profiled", {
        timeoutMs: PROFILE_TIMEOUT_MS,
        waitingFor: `rank ${h.rank}'s step ${beside}`,
      })
      .then((r) => r.msg.replicaStepMs[0]!);
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // Timed alone the same way first: a mean against a mean, since a fastest-of is a different measure.
    const alone = await time(crowded[0]!, "alone");
    const shared = await Promise.all(crowded.map((h) => time(h, "while the workers beside it step too")));
    if (alone > 0) ratios.push(shared.reduce((n, t) => n + t, 0) / shared.length / alone);
  }
  return ratios.length > 0 ? { workers: crowded.length, slowdown: Math.max(1, median(ratios)) } : undefined;
}

/**
 * A kept profile's key: the batch, what was timed, and the topology with its names numbered.
 * Names say nothing of speed, and TF.js names every new layer anew (dense_Dense1, dense_Dense3):
 * a notebook cell that builds the model again and fits it would otherwise be timed again, a
 * second or a tenth of an epoch each time.
 */
function key(topology: Record<string, unknown>, batchSize: number, layers: boolean): string {
  return `${batchSize}/${layers ? "layers" : "step"}/${JSON.stringify(withoutNames(topology))}`;
}

/** `topology` with each layer's and model's name (and every reference to it) replaced by its number in order of first appearance. */
export function withoutNames(topology: Record<string, unknown>): unknown {
  const numbers = new Map<string, string>();
  const collect = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(collect);
    else if (v !== null && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k === "name" && typeof x === "string" && !numbers.has(x)) numbers.set(x, `#${numbers.size}`);
        collect(x);
      }
  };
  const rename = (v: unknown): unknown =>
    typeof v === "string"
      ? (numbers.get(v) ?? v)
      : Array.isArray(v)
        ? v.map(rename)
        : v !== null && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rename(x)]))
          : v;
  collect(topology);
  return rename(topology);
}

/**
 * Sharing rounds that fit in what is left of a profile's budget: each is a window alone and one
 * shared, after two warm-up steps each. None left: the plan assumes workers per core instead.
 */
function roundsWithin(leftMs: number, stepMs: number): number {
  const round = 2 * (SHARED_MS + 2 * stepMs);
  return Math.max(0, Math.min(SHARED_ROUNDS, Math.floor(leftMs / round)));
}
