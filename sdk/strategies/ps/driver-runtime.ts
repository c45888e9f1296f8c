import * as tf from "@tensorflow/tfjs";
import { validateOnReplicas } from "../data/validate-replicas";
import { scheduleRates } from "../../driver/learning-rates";
import type { WorkerHandle } from "../../members/worker-handle";
import { batchAttachments, type Dataset } from "../../data/dataset";
import { ConfigError, ModelError } from "../../errors/errors";
import type { Tensorlike } from "../../protocol/tensor";
import { splitOf } from "../../plan/batches";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { wallClock } from "../../util/clock";
import { slowdown } from "../data/replica-load";
import { runAsync } from "./async-loop";
import { pushRecord } from "./push-records";
import type { EpochValidation, MemberMemory, RunRecord, PsRunRecord, PushRecord, StepRecord } from "../../metrics/records";
import type { PlanMethods, PsPlan, ShardVariable } from "../../plan/plans";
import { checkpointing, restoreOptimizers, resumeIfAsked } from "../../driver/checkpoint/fit-checkpoint";
import { awaitAll, loadEverywhere, release } from "../../driver/await";
import { replicaStepOf } from "../../metrics/replica-step";
import { computeEnd, stepOutcome, straggler, workerStep } from "../../driver/step-records";
import { type FitContext } from "../../driver/fit-context";
import { fetchWeightsOf, hostCopies } from "../../driver/model-transfer";
import { runSteps } from "../../driver/step-loop";
import { serverWiring } from "../../plan/wiring";
import type { ReplicaStepChoice } from "../../protocol/profile-messages";
import { FitAborted } from "../../driver/fit-stop";

/**
 * Parameter servers, driven from here: the servers get their shards, the workers the model;
 * then sync steps (every worker, one update per step) or the async loop; at the end the model
 * gets the servers' parameters.
 */
export async function fitParameterServers(ctx: FitContext, model: tf.LayersModel, dataset: Dataset, given: ResolvedFitOptions, plan: PsPlan & PlanMethods): Promise<RunRecord> {
  const started = performance.now();
  refuseWhatCannotWork(model, given, plan);
  const { resumed, options: o } = resumeIfAsked(given, "ps", model, plan.model, dataset);
  const workers = ctx.workers;
  await ctx.connect(serverWiring(workers.length));
  // Async servers apply a schedule by their own count of updates: they get every step's rate up front.
  const replicaStep = await loadAll(ctx, model, o, plan, plan.mode === "async" ? scheduleRates(o, dataset.size) : undefined);
  const holders = ctx.servers.map((sv, i) => ({ name: `server ${i}`, from: sv, to: [sv] }));
  if (resumed) await restoreOptimizers(ctx, resumed.ckpt, holders);
  // Sync workers validate at each epoch's end on the servers' weights (each pulls them first).
  const more = { ...checkpointing(ctx, o, resumed, { strategy: "ps", summary: plan.model, dataset, holders, weights: () => serverWeights(ctx, plan) }), ...(o.validation ? { validate: validateOnReplicas(ctx, workers, o.validation, o.batchSize) } : {}) };
  const t = { fitStartWall: wallClock(), fitStart: performance.now() };
  const held = o.validation;
  const asyncValidate = held ? (live: readonly WorkerHandle[], epoch: number) => validateOnReplicas(ctx, live, held, o.batchSize)(epoch) : undefined;
  const result = plan.mode === "sync" ? await runSync(ctx, o, dataset, more, t, plan) : await runAsync(ctx, o, dataset, plan, t, asyncValidate);
  if (result.stopped) {
    await releaseLive(ctx, result.live);
    throw result.stopped;
  }
  const psRecord: PsRunRecord = { mode: plan.mode, staleness: plan.mode === "sync" ? null : plan.staleness, pushes: result.pushes, departures: result.departures, serverVersions: await takeServerWeights(ctx, model, plan) };
  const memory = await releaseLive(ctx, workers.filter((w) => !w.lost));
  const validation = "validation" in result && result.validation.length > 0 ? { validation: result.validation } : {};
  return { history: result.history, plan, workers: workers.map((w) => w.snapshot()), seed: o.seed, epochs: o.epochs, wallMs: performance.now() - started, ps: psRecord, ...(replicaStep ? { replicaStep } : {}), ...validation, ...(memory.length ? { memory } : {}) };
}

/** Async checkpoints, and state that is not float (which servers could not average), are refused before anything is sent. */
function refuseWhatCannotWork(model: tf.LayersModel, given: ResolvedFitOptions, plan: PsPlan): void {
  if ((given.checkpoint || given.resumeFrom) && plan.mode === "async") {
    throw new FitAborted(
      new ConfigError("checkpoints are written for sync parameter servers; async ones apply pushes in an order no rerun repeats, so a resumed run could not equal an uninterrupted one", {
        hint: 'use strategy("ps", { mode: "sync" }) to checkpoint, or drop checkpoint and resumeFrom',
      }),
    );
  }
  if (given.callbacks && plan.mode === "async") {
    throw new FitAborted(
      new ConfigError("callbacks are called at the step boundaries of synchronous fits; async parameter servers have none (each worker pushes on its own)", {
        hint: 'use strategy("ps", { mode: "sync" }) or strategy("data") with callbacks, or read each push with onStep',
      }),
    );
  }
  const odd = model.nonTrainableWeights.find((w) => w.dtype !== "float32");
  if (odd) {
    throw new FitAborted(
      new ModelError(`non-trainable weight ${odd.originalName} is ${odd.dtype}; parameter servers hold the model's state as float32 and combine the workers' changes of it`, {
        hint: 'train this model with strategy("data")',
        details: { weight: odd.originalName },
      }),
    );
  }
}

/** Each server gets its shard of the trainable variables; each worker the whole model. */
async function loadAll(ctx: FitContext, model: tf.LayersModel, o: ResolvedFitOptions, plan: PsPlan, rates: number[] | undefined): Promise<ReplicaStepChoice | undefined> {
  const n = ctx.workers.length;
  const stepMs = ctx.spec.timeouts.stepMs;
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = hostCopies(model.getWeights());
  const trainable = hostCopies(model.trainableWeights.map((w) => w.read()));
  const state = hostCopies(model.nonTrainableWeights.map((w) => w.read()));
  const shards = plan.servers.map((s) => s.variables.map((v) => v.index));
  const stateShards = plan.servers.map((s) => s.state.map((v) => v.index));
  const described = (vs: readonly ShardVariable[]) => vs.map((v) => ({ index: v.index, shape: [...v.shape] }));
  const loading = { timeoutMs: stepMs, waitingFor: "the model to load" };
  const loaded = await loadEverywhere(() =>
    awaitAll(ctx)([
      ...ctx.servers.map((s, i) =>
        s.channel.request(
          {
            type: "load",
            role: "ps-server",
            optimizer: o.optimizer,
            loss: o.loss,
            stepTimeoutMs: stepMs,
            index: i,
            mode: plan.mode,
            workers: n,
            ...(rates ? { rates } : {}),
            variables: described(plan.servers[i]!.variables),
            state: described(plan.servers[i]!.state),
            ...(plan.compression ? { compression: plan.compression } : {}),
          },
          "loaded",
          { ...loading, waitingFor: "its shard of the parameters", attachments: [...plan.servers[i]!.variables.map((v) => trainable[v.index]!), ...plan.servers[i]!.state.map((v) => state[v.index]!)] },
        ),
      ),
      ...ctx.workers.map((w) =>
        w.channel.request(
          { type: "load", role: "ps-worker", topology, optimizer: o.optimizer, loss: o.loss, ...(o.heads ? { heads: o.heads } : {}), metrics: o.metrics, ...(o.classTable ? { classWeight: o.classTable } : {}), replicaBatch: Math.ceil(o.batchSize / n), stepTimeoutMs: stepMs, mode: plan.mode, shards, state: stateShards, ...slowdown(plan, w.rank), ...(plan.compression ? { compression: plan.compression } : {}), ...(o.accumulate > 1 ? { accumulate: o.accumulate } : {}) },
          "loaded",
          { ...loading, attachments: weights },
        ),
      ),
    ]),
  );
  const lengths = new Set(loaded.slice(ctx.servers.length).map((l) => l.msg.gradientLength));
  if (lengths.size !== 1 || !lengths.has(plan.model.trainableParamCount)) {
    throw new ModelError(`workers built gradients of ${[...lengths].join(", ")} elements; the driver's model has ${plan.model.trainableParamCount} trainable parameters`);
  }
  return replicaStepOf(loaded.slice(ctx.servers.length).map((l) => l.msg.replicaStep));
}

/**
 * Each server's flat shard cut back into its variables and state, placed by their index in
 * model.weights (trainable weights first, then the non-trainable ones, as TF.js orders them).
 */
function unshard(plan: PsPlan, shards: readonly Float32Array[], place: (index: number, values: Float32Array, shape: readonly number[]) => void): void {
  const stateAt = plan.model.variables.length;
  shards.forEach((flat, i) => {
    let off = 0;
    const server = plan.servers[i]!;
    for (const [v, at] of [...server.variables.map((v) => [v, v.index] as const), ...server.state.map((v) => [v, stateAt + v.index] as const)]) {
      const size = v.shape.reduce((a, d) => a * d, 1);
      place(at, flat.subarray(off, off + size), v.shape);
      off += size;
    }
  });
}

/** The servers' shards, as the model's weights in order. */
async function serverWeights(ctx: FitContext, plan: PsPlan): Promise<Tensorlike[]> {
  const shards = await fetchWeightsOf(ctx, ctx.servers, "its shard to checkpoint");
  const out: Tensorlike[] = new Array(plan.model.variables.length + plan.model.state.length);
  unshard(plan, shards.map((sh) => sh[0]!.data as Float32Array), (index, values, shape) => (out[index] = { data: values.slice(), shape: [...shape] }));
  return out;
}

/** The trained parameters and state are the servers': the driver's model takes them. Returns each server's version. */
async function takeServerWeights(ctx: FitContext, model: tf.LayersModel, plan: PsPlan): Promise<number[]> {
  const fetched = await awaitAll(ctx)(ctx.servers.map((s) => s.channel.request({ type: "fetchWeights" }, "weights", { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: "its shard of the trained parameters" })));
  const weights = model.weights;
  unshard(plan, fetched.map((f) => f.attachments[0]!.data as Float32Array), (index, values, shape) => {
    const t = tf.tensor(values, [...shape], "float32");
    weights[index]!.write(t);
    t.dispose();
  });
  return fetched.map((f) => f.msg.version ?? 0);
}

/** Sync steps: every worker pushes one gradient per step; the servers sum them and apply one update. */
async function runSync(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  more: Parameters<typeof runSteps>[4],
  t: { fitStartWall: number; fitStart: number },
  plan: PsPlan,
): Promise<{ history: StepRecord[]; pushes: PushRecord[]; departures: []; live: readonly WorkerHandle[]; stopped: FitAborted | undefined; validation: EpochValidation[] }> {
  const workers = ctx.workers;
  const pushes: PushRecord[] = [];
  const result = await runSteps(ctx, o, dataset, ({ step, epoch, order, start, end, learningRate }) => {
    const count = end - start;
    const slices = splitOf(plan.batch, count).perReplica;
    const shares = slices.map((s) => s / count);
    let from = start;
    const requests = workers.map((w, r) => {
      const batch = dataset.gather(order, from, from + slices[r]!);
      from += slices[r]!;
      return w.channel.request({ type: "step", step, epoch, weight: shares[r]!, ps: { clock: step, minVersion: step }, ...(learningRate !== undefined ? { learningRate } : {}) }, "stepDone", { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: `step ${step}`, attachments: batchAttachments(batch) });
    });
    return {
      samples: count,
      done: Promise.all(requests),
      summarize: (replies) => {
        const endMs = performance.now() - t.fitStart;
        replies.forEach((r, rank) => pushes.push(pushRecord(r, workers[rank]!, t.fitStartWall, { clock: step, epoch, samples: slices[rank]!, lead: 0, endMs })));
        return {
          loss: replies.reduce((a, r, i) => a + shares[i]! * r.msg.loss, 0),
          workers: replies.map((r, rank) => workerStep(r, workers[rank]!, t.fitStartWall)),
          straggler: straggler(replies.map((r, rank) => computeEnd(r, workers[rank]!))),
          ...stepOutcome(replies, workers.map((w) => w.rank), shares),
        };
      },
    };
  }, more);
  return { history: result.history, pushes, departures: [], live: workers, stopped: result.stopped, validation: result.validation };
}

/** Tells the servers and the workers still there that the fit is over. */
async function releaseLive(ctx: FitContext, live: readonly WorkerHandle[]): Promise<MemberMemory[]> {
  return await release(ctx, [...ctx.servers, ...live]);
}
