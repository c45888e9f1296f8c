import type * as tf from "@tensorflow/tfjs";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import type { FitContext } from "../../driver/fit-context";
import { awaitAll, loadEverywhere, refuseOtherGradients } from "../../driver/await";
import { hostCopies } from "../../driver/model-transfer";
import { replicaStepOf } from "../../metrics/replica-step";
import type { PsPlan, ShardVariable } from "../../plan/plans";
import type { ReplicaStepChoice } from "../../protocol/profile-messages";
import type { RequestDraft } from "../../transport/channel";
import { slowdown } from "../data/replica-load";
import { topologyOf } from "../../model/topology";
import type { WorkerHandle } from "../../members/worker-handle";

/** Each server gets its shard of the trainable variables; each worker the whole model. */
export async function loadAll(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: PsPlan,
  rates: number[] | undefined,
): Promise<ReplicaStepChoice | undefined> {
  const stepMs = ctx.spec.timeouts.stepMs;
  const weights = hostCopies(model.getWeights());
  const trainable = hostCopies(model.trainableWeights.map((w) => w.read()));
  const state = hostCopies(model.nonTrainableWeights.map((w) => w.read()));
  const loading = { timeoutMs: stepMs, waitingFor: "the model to load" };
  // A worker that built something else is refused as a load that failed: the next load replaces every one.
  const loaded = await loadEverywhere(async () => {
    const replies = await awaitAll(ctx)([
      ...ctx.servers.map((s, i) => {
        const shard = plan.servers[i]!;
        const attachments = [
          ...shard.variables.map((v) => trainable[v.index]!),
          ...shard.state.map((v) => state[v.index]!),
        ];
        return s.channel.request(serverLoad(ctx, o, plan, i, rates), "loaded", {
          ...loading,
          waitingFor: "its shard of the parameters",
          attachments,
        });
      }),
      ...ctx.workers.map((w) =>
        w.channel.request(workerLoad(ctx, model, o, plan, w.rank), "loaded", { ...loading, attachments: weights }),
      ),
    ]);
    refuseOtherGradients(
      replies.slice(ctx.servers.length).map((l) => l.msg.gradientLength),
      plan.model.trainableParamCount,
    );
    return replies;
  });
  return replicaStepOf(loaded.slice(ctx.servers.length).map((l) => l.msg.replicaStep));
}

/** One worker loaded in a lost one's place (a spare): the whole model, as the others got it; its first step pulls the parameters. */
export async function loadWorker(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: PsPlan,
  w: WorkerHandle,
): Promise<void> {
  const weights = hostCopies(model.getWeights());
  const load = workerLoad(ctx, model, o, plan, w.rank);
  const loading = { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: "the model to load", attachments: weights };
  await awaitAll(ctx)([w.channel.request(load, "loaded", loading)]);
}

const described = (vs: readonly ShardVariable[]) => vs.map((v) => ({ index: v.index, shape: [...v.shape] }));

/** Server i's load: its variables and state, the optimizer, and (async) every step's rate. */
function serverLoad(
  ctx: FitContext,
  o: ResolvedFitOptions,
  plan: PsPlan,
  i: number,
  rates: number[] | undefined,
): RequestDraft {
  return {
    type: "load",
    role: "ps-server",
    optimizer: o.optimizer,
    loss: o.loss,
    stepTimeoutMs: ctx.spec.timeouts.stepMs,
    index: i,
    mode: plan.mode,
    workers: ctx.workers.length,
    ...(rates ? { rates } : {}),
    variables: described(plan.servers[i]!.variables),
    state: described(plan.servers[i]!.state),
    ...(plan.compression ? { compression: plan.compression } : {}),
  };
}

/** A worker's load: the whole model, and which server holds which variables. */
function workerLoad(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: PsPlan,
  rank: number,
): RequestDraft {
  return {
    type: "load",
    role: "ps-worker",
    topology: topologyOf(model),
    optimizer: o.optimizer,
    loss: o.loss,
    ...(o.heads ? { heads: o.heads } : {}),
    metrics: o.metrics,
    ...(o.classTable ? { classWeight: o.classTable } : {}),
    replicaBatch: Math.ceil(o.batchSize / ctx.workers.length),
    stepTimeoutMs: ctx.spec.timeouts.stepMs,
    mode: plan.mode,
    shards: plan.servers.map((s) => s.variables.map((v) => v.index)),
    state: plan.servers.map((s) => s.state.map((v) => v.index)),
    ...slowdown(plan, rank),
    ...(plan.compression ? { compression: plan.compression } : {}),
    ...(o.accumulate > 1 ? { accumulate: o.accumulate } : {}),
  };
}
