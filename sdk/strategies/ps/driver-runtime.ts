import * as tf from "@tensorflow/tfjs";
import { validateOnReplicas } from "../data/validate-replicas";
import { scheduleRates } from "../../driver/learning-rates";
import type { WorkerHandle } from "../../members/worker-handle";
import { type Dataset } from "../../data/dataset";
import { ConfigError, ModelError } from "../../errors/errors";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import { wallClock } from "../../util/clock";
import { runAsync } from "./async-loop";
import { loadAll, loadWorker } from "./load-members";
import { serverWeights, takeServerWeights } from "./server-weights";
import type {
  EpochValidation,
  MemberMemory,
  RunRecord,
  PsRunRecord,
  PushRecord,
  Departure,
  MembershipChange,
  StepRecord,
} from "../../metrics/records";
import type { PlanMethods, PsPlan } from "../../plan/plans";
import { checkpointing, restoreOptimizers, resumeIfAsked } from "../../driver/checkpoint/fit-checkpoint";
import { release } from "../../driver/await";
import { type FitContext } from "../../driver/fit-context";
import { runSteps } from "../../driver/step-loop";
import { serverWiring } from "../../plan/wiring";
import { SyncElastic } from "./sync-elastic";
import { syncStep } from "./sync-step";
import { FitAborted } from "../../driver/fit-stop";

/**
 * Parameter servers, driven from here: the servers get their shards, the workers the model;
 * then sync steps (every worker, one update per step) or the async loop; at the end the model
 * gets the servers' parameters.
 */
export async function fitParameterServers(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  given: ResolvedFitOptions,
  plan: PsPlan & PlanMethods,
): Promise<RunRecord> {
  const started = performance.now();
  refuseWhatCannotWork(model, given, plan);
  const { resumed, options: o } = resumeIfAsked(given, "ps", model, plan.model, dataset);
  const workers = ctx.workers;
  await ctx.connect(serverWiring(workers.length));
  // Async servers apply a schedule by their own count of updates: they get every step's rate up front.
  const replicaStep = await loadAll(
    ctx,
    model,
    o,
    plan,
    plan.mode === "async" ? scheduleRates(o, dataset.size) : undefined,
  );
  const holders = ctx.servers.map((sv, i) => ({ name: `server ${i}`, from: sv, to: [sv] }));
  if (resumed) await restoreOptimizers(ctx, resumed.ckpt, holders);
  // Sync workers validate at each epoch's end on the servers' weights (each pulls them first).
  const more = {
    ...checkpointing(ctx, o, resumed, {
      strategy: "ps",
      summary: plan.model,
      dataset,
      holders,
      weights: () => serverWeights(ctx, plan),
    }),
    // The workers still there at each epoch's end (an elastic sync fit may have lost some).
    ...(o.validation ? { validate: validateLive(ctx, o.validation, o.batchSize) } : {}),
  };
  const t = { fitStartWall: wallClock(), fitStart: performance.now() };
  const held = o.validation;
  const asyncValidate = held
    ? (live: readonly WorkerHandle[], epoch: number) => validateOnReplicas(ctx, live, held, o.batchSize)(epoch)
    : undefined;
  const result =
    plan.mode === "sync"
      ? await runSync(ctx, model, o, dataset, more, t, plan)
      : await runAsync(ctx, o, dataset, plan, t, asyncValidate);
  const record = await finishServers(ctx, model, plan, result);
  return {
    history: result.history,
    plan,
    workers: workers.map((w) => w.snapshot()),
    seed: o.seed,
    epochs: o.epochs,
    wallMs: performance.now() - started,
    ps: record.ps,
    ...(replicaStep ? { replicaStep } : {}),
    ...("membership" in result && result.membership.length > 0 ? { membership: result.membership } : {}),
    ...record.validation,
    ...(record.memory.length ? { memory: record.memory } : {}),
  };
}

/**
 * After the loop: a stopped fit's members released; else the model takes the servers'
 * parameters and the live members are released, their memory reported.
 */
async function finishServers(
  ctx: FitContext,
  model: tf.LayersModel,
  plan: PsPlan,
  result: Awaited<ReturnType<typeof runSync>> | Awaited<ReturnType<typeof runAsync>>,
): Promise<{ ps: PsRunRecord; memory: MemberMemory[]; validation: { validation?: EpochValidation[] } }> {
  if (result.stopped) {
    await releaseLive(ctx, result.live);
    throw result.stopped;
  }
  const ps: PsRunRecord = {
    mode: plan.mode,
    staleness: plan.mode === "sync" ? null : plan.staleness,
    pushes: result.pushes,
    departures: result.departures,
    serverVersions: await takeServerWeights(ctx, model, plan),
  };
  const memory = await releaseLive(
    ctx,
    ctx.workers.filter((w) => !w.lost),
  );
  const validation = "validation" in result && result.validation.length > 0 ? { validation: result.validation } : {};
  return { ps, memory, validation };
}

/** Async checkpoints, and state that is not float (which servers could not average), are refused before anything is sent. */
function refuseWhatCannotWork(model: tf.LayersModel, given: ResolvedFitOptions, plan: PsPlan): void {
  if ((given.checkpoint || given.resumeFrom) && plan.mode === "async") {
    throw new FitAborted(
      new ConfigError(
        "checkpoints are written for sync parameter servers; async ones apply pushes in an order no rerun repeats, so a resumed run could not equal an uninterrupted one",
        {
          hint: 'use strategy("ps", { mode: "sync" }) to checkpoint, or drop checkpoint and resumeFrom',
        },
      ),
    );
  }
  if (given.callbacks && plan.mode === "async") {
    throw new FitAborted(
      new ConfigError(
        "callbacks are called at the step boundaries of synchronous fits; async parameter servers have none (each worker pushes on its own)",
        {
          hint: 'use strategy("ps", { mode: "sync" }) or strategy("data") with callbacks, or read each push with onStep',
        },
      ),
    );
  }
  const odd = model.nonTrainableWeights.find((w) => w.dtype !== "float32");
  if (odd) {
    throw new FitAborted(
      new ModelError(
        `non-trainable weight ${odd.originalName} is ${odd.dtype}; parameter servers hold the model's state as float32 and combine the workers' changes of it`,
        {
          hint: 'train this model with strategy("data")',
          details: { weight: odd.originalName },
        },
      ),
    );
  }
}

/** Sync steps: every worker pushes one gradient per step; the servers sum them and apply one update. */
async function runSync(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  dataset: Dataset,
  more: Parameters<typeof runSteps>[4],
  t: { fitStartWall: number; fitStart: number },
  plan: PsPlan,
): Promise<{
  history: StepRecord[];
  pushes: PushRecord[];
  departures: Departure[];
  membership: MembershipChange[];
  live: readonly WorkerHandle[];
  stopped: FitAborted | undefined;
  validation: EpochValidation[];
}> {
  const pushes: PushRecord[] = [];
  // With spares, a lost worker's rank is taken by one, loaded and linked to the servers.
  const enlist = ctx.spec.spares
    ? async (lost: WorkerHandle): Promise<WorkerHandle | null> => {
        const spare = ctx.substitute(lost);
        if (!spare) return null;
        await loadWorker(ctx, model, o, plan, spare);
        await ctx.connect(serverWiring(ctx.workers.length), { members: [spare] });
        return spare;
      }
    : null;
  const elastic = plan.elastic ? new SyncElastic(ctx, plan.elastic.minWorkers, t.fitStart, enlist) : null;
  const loop = elastic ? { ...more, oneAtATime: true } : more;
  const result = await runSteps(ctx, o, dataset, (at) => syncStep(ctx, dataset, plan, t, at, pushes, elastic), loop);
  const { history, stopped, validation } = result;
  const live = ctx.workers.filter((w) => !w.lost);
  const membership = elastic?.membership ?? [];
  return { history, pushes, departures: elastic?.departures ?? [], membership, live, stopped, validation };
}

function validateLive(ctx: FitContext, held: NonNullable<ResolvedFitOptions["validation"]>, batchSize: number) {
  return (epoch: number) =>
    validateOnReplicas(
      ctx,
      ctx.workers.filter((w) => !w.lost),
      held,
      batchSize,
    )(epoch);
}

/** Tells the servers and the workers still there that the fit is over. */
async function releaseLive(ctx: FitContext, live: readonly WorkerHandle[]): Promise<MemberMemory[]> {
  return await release(ctx, [...ctx.servers, ...live]);
}
