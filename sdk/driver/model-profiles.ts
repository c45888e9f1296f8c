import * as tf from "@tensorflow/tfjs";
import type { LossName } from "../protocol/loss-names";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { profileBatches, type ModelProfile } from "../plan/profile";
import { MeshtrainError, StateError, WorkerLostError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { WorkerHandle } from "../members/worker-handle";
import { median } from "../util/median";

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

/**
 * The models this cluster has timed on a worker, by topology and batch: plan() and fit() predict
 * from them. They are timed on the slowest worker (by its matrix speed at join), since a
 * synchronous step waits for the slowest.
 */
export class ModelProfiles {
  private readonly kept = new Map<string, ModelProfile>();

  /** A profile already taken for this model and batch, if any. */
  find(model: tf.LayersModel, batchSize: number | undefined): ModelProfile | undefined {
    return batchSize === undefined ? undefined : this.kept.get(key(topologyOf(model), batchSize));
  }

  /**
   * The profile a fit's plan predicts from. A model the workers cannot time (its replica step
   * fails on random data, or it would not fit one worker) is planned from its FLOPs, and the
   * driver says why; so is a model with layers of the user's own classes, whose code (it may
   * print, count its calls or fail) runs only when the user trains. A worker lost meanwhile
   * fails the fit as it would during a step, with the cause `lossWithin` reports.
   */
  async forFit(handles: readonly WorkerHandle[], model: tf.LayersModel, o: { batchSize: number; loss: LossName; optimizer: OptimizerSpec }, lossWithin: (ms: number) => Promise<MeshtrainError | undefined>): Promise<ModelProfile | undefined> {
    if (model.layers.some((l) => !BUILT_IN.has(l.getClassName()))) return undefined;
    // A software GPU computes a step in seconds and its speed says nothing of a real GPU's: timing it would cost more than the fit.
    const soft = handles.find((h) => h.info?.gpu?.software);
    if (soft) {
      process.stderr.write(`meshtrain: the plan predicts from the model's FLOPs: rank ${soft.rank} runs on a software GPU (${soft.info!.gpu!.name}), not worth timing\n`);
      return undefined;
    }
    try {
      return await this.take(handles, model, o);
    } catch (err) {
      const lost = await lossWithin(LOSS_WAIT_MS);
      if (lost) throw lost;
      if (err instanceof WorkerLostError) throw err;
      process.stderr.write(`meshtrain: the plan predicts from the model's FLOPs: timing it on a worker failed: ${err instanceof MeshtrainError ? err.summary : String(err)}\n`);
      return undefined;
    }
  }

  /** Times the model on the slowest worker at the batch and an eighth of it (once per model and batch). */
  async take(handles: readonly WorkerHandle[], model: tf.LayersModel, o: { batchSize: number; loss: LossName; optimizer: OptimizerSpec }): Promise<ModelProfile> {
    const topology = topologyOf(model);
    const k = key(topology, o.batchSize);
    const had = this.kept.get(k);
    if (had) return had;
    const slowest = [...handles].sort((a, b) => (a.info?.gflops ?? 0) - (b.info?.gflops ?? 0))[0];
    if (!slowest) throw new StateError("the cluster has no worker to time the model on");
    const batches = profileBatches(o.batchSize);
    const r = await slowest.channel.request(
      { type: "profile", topology, optimizer: o.optimizer, loss: o.loss, batches },
      "profiled",
      { timeoutMs: PROFILE_TIMEOUT_MS, waitingFor: "the model's layer and step times" },
    );
    const m = r.msg;
    const sharing = await sharedSlowdown(handles, { type: "profile", topology, optimizer: o.optimizer, loss: o.loss, batches });
    const profile: ModelProfile = Object.freeze({ batches: m.batches, layers: m.layers, replicaStepMs: m.replicaStepMs, replicaStep: m.replicaStep, timedOn: `rank ${slowest.rank} (${slowest.info?.backend ?? "?"})`, ...(sharing ? { sharing } : {}) });
    this.kept.set(k, profile);
    return profile;
  }
}

/**
 * How much the most crowded machine's workers slow each other when they all compute at once
 * (cores, memory bandwidth and their own communication threads shared): one of them steps for
 * SHARED_MS alone, then all of them at once, and their mean step is set against its own; the
 * median over SHARED_ROUNDS such pairs, each close enough in time to meet the machine alike.
 * Undefined where every worker has a machine of its own.
 */
async function sharedSlowdown(handles: readonly WorkerHandle[], msg: Omit<MessageOf<"profile">, "v" | "id">): Promise<ModelProfile["sharing"]> {
  const byHost = new Map<string, WorkerHandle[]>();
  for (const h of handles) if (h.info) byHost.set(h.info.hostname, [...(byHost.get(h.info.hostname) ?? []), h]);
  const crowded = [...byHost.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  if (crowded.length < 2) return undefined;
  const time = (h: WorkerHandle, beside: string): Promise<number> =>
    h.channel.request({ ...msg, sharedForMs: SHARED_MS }, "profiled", { timeoutMs: PROFILE_TIMEOUT_MS, waitingFor: `rank ${h.rank}'s step ${beside}` }).then((r) => r.msg.replicaStepMs[0]!);
  const ratios: number[] = [];
  for (let round = 0; round < SHARED_ROUNDS; round++) {
    // Timed alone the same way first: a mean against a mean, since a fastest-of is a different measure.
    const alone = await time(crowded[0]!, "alone");
    const shared = await Promise.all(crowded.map((h) => time(h, "while the workers beside it step too")));
    if (alone > 0) ratios.push(shared.reduce((n, t) => n + t, 0) / shared.length / alone);
  }
  return ratios.length > 0 ? { workers: crowded.length, slowdown: Math.max(1, median(ratios)) } : undefined;
}

function topologyOf(model: tf.LayersModel): Record<string, unknown> {
  return model.toJSON(null, false) as unknown as Record<string, unknown>;
}

function key(topology: Record<string, unknown>, batchSize: number): string {
  return `${batchSize}/${JSON.stringify(topology)}`;
}
