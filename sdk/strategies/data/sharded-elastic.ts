import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../data/dataset";
import { awaitAll, echoesLoss, memberLoss } from "../../driver/await";
import { checkpointSaver } from "../../driver/checkpoint/fit-checkpoint";
import { fetchPart, partsSource, restoreShards, restoreShardsFrom } from "../../driver/checkpoint/sharded";
import { readCheckpoint } from "../../driver/checkpoint/store";
import type { ShardedElastic } from "../../driver/elastic-sharded";
import type { FitContext } from "../../driver/fit-context";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { fetchWeightsOf } from "../../driver/model-transfer";
import type { WorkerHandle } from "../../members/worker-handle";
import type { DataParallelPlan } from "../../plan/plans";
import type { Tensorlike } from "../../protocol/tensor";

/**
 * An elastic fit's re-sharding under ZeRO (see ShardedElastic): checkpoints of the members'
 * parts every `checkpoint.every` steps; after a loss, every survivor loaded again from the last
 * one, re-sharded over them; a join re-shards the members' state (fetched one replica at a time
 * and held in the driver) over all of them. A replica re-loaded cuts its shard where the new
 * ring places it.
 */
export function shardedElastic(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions & { checkpoint: NonNullable<ResolvedFitOptions["checkpoint"]> },
  plan: DataParallelPlan,
  load: (w: WorkerHandle, weights: Tensorlike[]) => Promise<void>,
): ShardedElastic {
  // ZeRO-3 replicas gather the weights together: every one is asked.
  const weightsOf = async (members: readonly WorkerHandle[], why: string): Promise<Tensorlike[]> =>
    (await fetchWeightsOf(ctx, plan.shard === "parameters" ? members : [members[0]!], why))[0]!;
  const dir = o.checkpoint.dir;
  return {
    cadence: o.checkpoint.cadence,
    save: async (members, stepsDone) => {
      // A fetch that fails waits for the loss it echoes: a member's here, which the cluster never reports as its own.
      const watching: FitContext = { ...ctx, lossWithin: (ms) => memberLoss(ctx, members, ms) };
      const save = checkpointSaver(watching, {
        dir,
        strategy: "data",
        summary: plan.model,
        dataset,
        options: o,
        holders: [],
        weights: () => weightsOf(members, "the weights to checkpoint"),
        sharded: members,
      });
      try {
        await save(stepsDone);
        return true;
      } catch (err) {
        // A member lost while its part was fetched: the checkpoint is written under a temporary name, so the last one is whole.
        if (await echoesLoss(ctx, members, err)) return false;
        throw err;
      }
    },
    async fromCheckpoint(members) {
      const ckpt = readCheckpoint(dir);
      const weights = ckpt.weights.map((data, i) => ({ data, shape: ckpt.body.weights[i]!.shape }));
      await awaitAll(ctx)(members.map((w) => load(w, weights)));
      await restoreShards(ctx, ckpt, model, members);
      return ckpt.body.step;
    },
    async regroup(members, all, rewire) {
      const weights = await weightsOf(members, "the weights to re-shard");
      const parts = [];
      for (const w of members) parts.push(await fetchPart(ctx, w, "to re-shard"));
      await rewire();
      await awaitAll(ctx)(all.map((w) => load(w, weights)));
      await restoreShardsFrom(ctx, partsSource(parts), all);
    },
  };
}
