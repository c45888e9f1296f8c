import type * as tf from "@tensorflow/tfjs";
import type { LossName } from "../config/loss";
import type { OptimizerSpec } from "../config/optimizer";
import { profileBatches, type ModelProfile } from "../plan/profile";
import { MeshtrainError, StateError } from "../errors/errors";
import type { WorkerHandle } from "./worker-handle";

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
    return batchSize === undefined ? undefined : this.kept.get(key(model, batchSize));
  }

  /**
   * The profile a fit's plan predicts from: a model the workers cannot time (its replica step
   * fails on random data, or timing takes too long) is planned from its FLOPs, and the driver
   * says why; the fit itself goes on and meets any real problem where it belongs.
   */
  async forFit(handles: readonly WorkerHandle[], model: tf.LayersModel, o: { batchSize: number; loss: LossName; optimizer: OptimizerSpec }): Promise<ModelProfile | undefined> {
    try {
      return await this.take(handles, model, o);
    } catch (err) {
      process.stderr.write(`meshtrain: the plan predicts from the model's FLOPs: timing it on a worker failed: ${err instanceof MeshtrainError ? err.summary : String(err)}\n`);
      return undefined;
    }
  }

  /** Times the model on the slowest worker at the batch and an eighth of it (once per model and batch). */
  async take(handles: readonly WorkerHandle[], model: tf.LayersModel, o: { batchSize: number; loss: LossName; optimizer: OptimizerSpec }): Promise<ModelProfile> {
    const k = key(model, o.batchSize);
    const had = this.kept.get(k);
    if (had) return had;
    const slowest = [...handles].sort((a, b) => (a.info?.gflops ?? 0) - (b.info?.gflops ?? 0))[0];
    if (!slowest) throw new StateError("the cluster has no worker to time the model on");
    const batches = profileBatches(o.batchSize);
    const r = await slowest.channel.request(
      { type: "profile", topology: model.toJSON(null, false) as unknown as Record<string, unknown>, optimizer: o.optimizer, loss: o.loss, batches },
      "profiled",
      { timeoutMs: PROFILE_TIMEOUT_MS, waitingFor: "the model's layer and step times" },
    );
    const m = r.msg;
    const profile: ModelProfile = Object.freeze({ batches: m.batches, layers: m.layers, replicaStepMs: m.replicaStepMs, replicaStep: m.replicaStep, timedOn: `rank ${slowest.rank} (${slowest.info?.backend ?? "?"})` });
    this.kept.set(k, profile);
    return profile;
  }
}

function key(model: tf.LayersModel, batchSize: number): string {
  return `${batchSize}/${JSON.stringify(model.toJSON(null, false))}`;
}
