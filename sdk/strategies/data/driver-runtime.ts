import type * as tf from "@tensorflow/tfjs";
import { batchAttachments, type Dataset } from "../../data/dataset";
import { ConfigError, DataError } from "../../errors/errors";
import { replicaRanges, splitBatch, splitOf, stepsPerEpoch } from "../../plan/batches";
import type { BatchAt } from "../../driver/epoch-walk";
import { wallClock } from "../../util/clock";
import type { WorkerHandle } from "../../members/worker-handle";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import type { Tensorlike } from "../../protocol/tensor";
import type { RunRecord, StepRecord, MembershipChange, OverlapTrialRecord } from "../../metrics/records";
import type { PlanMethods, DataParallelPlan } from "../../plan/plans";
import { awaitAll, loadEverywhere, refuseOtherGradients, release } from "../../driver/await";
import { replicaStepOf } from "../../metrics/replica-step";
import { checkIdentical } from "../../driver/replicas";
import { type FitContext } from "../../driver/fit-context";
import { fetchWeightsOf, hostCopies, setModelWeights } from "../../driver/model-transfer";
import { runSteps, type IssuedStep } from "../../driver/step-loop";
import { replicasStep } from "../../driver/step-records";
import { dataWiring } from "../../plan/wiring";
import { checkpointing, restoreOptimizers, resumeIfAsked } from "../../driver/checkpoint/fit-checkpoint";
import { restoreShards, wholeOf } from "../../driver/checkpoint/sharded";
import { shardedElastic } from "./sharded-elastic";
import { loadInParts } from "./load-in-parts";
import { choicesOfPlan, replicaLoadOf } from "./replica-load";
import { refusedPair } from "../../protocol/data-option-pairs";
import { runElastic } from "../../driver/elastic-loop";
import { ringOf } from "../../driver/elastic-record";
import { validateOnReplicas } from "./validate-replicas";
import { askedToStop, FitAborted } from "../../driver/fit-stop";
import { syncIfBetween, syncsAfter } from "./local-sync";
import { replacingLost } from "./replace-lost";
import { evictingSlow } from "./evict-slow";
import { OverlapTrial, overlapTrialFor, slowerReplicaMs } from "./overlap-trial";
import type { StepDone } from "../../driver/fit-context";

/** Synchronous data parallelism, driven from here: every worker a replica, one ring. */
export async function fitDataParallel(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  given: ResolvedFitOptions,
  plan: DataParallelPlan & PlanMethods,
): Promise<RunRecord> {
  const started = performance.now();
  const { resumed, options: o } = resumeIfAsked(given, "data", model, plan.model, dataset);
  refuseWhatCannotWork(o, dataset, plan);
  const workers = ctx.workers;
  // ZeRO-2 and -3 replicas cut their shards where the ring places them when they load: an elastic fit's is the one its loop forms.
  if (!plan.elastic) await ctx.connect(dataWiring(plan.ring));
  else if (plan.shard) await ctx.connect(ringOf(workers, workers.length));
  const loadOn = replicaLoader(ctx, model, dataset, o, plan);
  const weights = hostCopies(model.getWeights());
  // A replica that built something else is refused as a load that failed: every worker is loaded, and the next load replaces it.
  const loaded = await loadEverywhere(async () =>
    checkLoaded(await awaitAll(ctx)(workers.map((w) => loadOn(w, weights))), dataset, plan),
  );
  const replicaStep = replicaStepOf(loaded.map((l) => l.msg.replicaStep));
  // Sharded, each replica holds a part of the optimizer state: a checkpoint has a part per replica.
  const holders = plan.shard ? [] : [{ name: "replica", from: workers[0]!, to: workers }];
  if (resumed)
    await (plan.shard
      ? restoreShards(ctx, resumed.ckpt, model, workers)
      : restoreOptimizers(ctx, wholeOf(resumed.ckpt, model), holders));
  const run: DataRun = { ctx, model, dataset, o, plan, started, fitStartWall: wallClock(), resumed };
  const e = plan.elastic;
  const r = e
    ? await elasticFit(elasticRun(run, e), e.minWorkers, loadOn)
    : await fixedFit(run, holders, replicaStep?.native === true);
  return {
    ...r.record,
    ...(replicaStep ? { replicaStep } : {}),
    ...(r.overlapTrial ? { overlapTrial: r.overlapTrial } : {}),
    ...(r.validation.length > 0 ? { validation: r.validation } : {}),
  };
}

/** A loop's run and the validation it made, each epoch's. */
interface DataFitEnd {
  record: RunRecord;
  validation: NonNullable<RunRecord["validation"]>;
  overlapTrial?: OverlapTrialRecord | undefined;
}

/** What a data-parallel fit's two loops share. */
interface DataRun {
  ctx: FitContext;
  model: tf.LayersModel;
  dataset: Dataset;
  o: ResolvedFitOptions;
  plan: DataParallelPlan & PlanMethods;
  started: number;
  fitStartWall: number;
  resumed: ReturnType<typeof resumeIfAsked>["resumed"];
}

/** The fit over the workers it started with: one step loop, checkpoints of the one replica (or every shard). */
async function fixedFit(
  r: DataRun,
  holders: Parameters<typeof checkpointing>[3]["holders"],
  nativeStep: boolean,
): Promise<DataFitEnd> {
  const { ctx, model, dataset, o, plan } = r;
  const workers = ctx.workers;
  // ZeRO-3 replicas gather the weights together: every one is asked.
  const weightsFrom = plan.shard === "parameters" ? workers : [workers[0]!];
  const more = checkpointing(ctx, o, r.resumed, {
    strategy: "data",
    summary: plan.model,
    dataset,
    holders,
    weights: async () => (await fetchWeightsOf(ctx, weightsFrom, "the weights to checkpoint"))[0]!,
    ...(plan.shard ? { sharded: workers } : {}),
  });
  const validate = o.validation
    ? { validate: validateOnReplicas(ctx, workers, o.validation, o.batchSize, plan.shard === "parameters") }
    : {};
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  const startStep = r.resumed?.ckpt.body.step ?? 0;
  const trial = overlapTrialFor(plan.overlap.timed === true, nativeStep, startStep, perEpoch * o.epochs - startStep);
  const timing = trial instanceof OverlapTrial ? trial : null;
  const issue = (batch: BatchAt): IssuedStep => {
    const step = batch.step;
    const also = { ...syncsAfter(plan, perEpoch, step), ...(timing ? { overlap: timing.flag(step) } : {}) };
    const issued = issueStep(ctx, dataset, plan, r.fitStartWall, batch, also);
    const end = (replies: StepDone[]) =>
      timing?.ended(
        step,
        slowerReplicaMs(replies),
        replies.every((x) => x.msg.overlapped),
      );
    if (timing) issued.done.then(end, () => undefined);
    return issued;
  };
  const { history, stopped, validation } = await runSteps(ctx, o, dataset, issue, { ...more, ...validate });
  if (!stopped || askedToStop(stopped)) await syncIfBetween(ctx, plan, perEpoch, workers, history);
  const record = await finish(ctx, model, o, plan, history, workers, stopped, r.started);
  const overlapTrial = trial instanceof OverlapTrial ? (trial.record() ?? undefined) : (trial ?? undefined);
  return { record, validation, overlapTrial };
}

/** An elastic run as its options ask: lost workers replaced (spares, `replace`), stragglers let go (`evict`). */
function elasticRun(run: DataRun, e: NonNullable<DataParallelPlan["elastic"]>): DataRun {
  const ctx = e.replace || e.spares > 0 ? replacingLost(run.ctx, e.replace) : run.ctx;
  const o = e.evict ? { ...run.o, onStep: evictingSlow(run.ctx, e.evict, e.minWorkers, run.o.onStep) } : run.o;
  return { ...run, ctx, o };
}

/** An elastic fit: members lost and added at step boundaries, each batch split over the members of its step. */
async function elasticFit(
  r: DataRun,
  minWorkers: number,
  loadOn: (w: WorkerHandle, attachments: Tensorlike[]) => Promise<unknown>,
): Promise<DataFitEnd> {
  const { ctx, model, dataset, o, plan } = r;
  const load = async (w: WorkerHandle, attachments: Tensorlike[]): Promise<void> =>
    void (await awaitAll(ctx)([loadOn(w, attachments)]));
  // The plan split each batch among its replicas; a membership the plan did not make shares it evenly.
  const split = (count: number, members: number): readonly number[] =>
    (members === plan.replicas ? splitOf(plan.batch, count) : splitBatch(count, members)).perReplica;
  const validation = o.validation;
  const validate = validation
    ? {
        validate: (members: readonly WorkerHandle[], epoch: number) =>
          validateOnReplicas(ctx, members, validation, o.batchSize, plan.shard === "parameters")(epoch),
      }
    : {};
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  const local = plan.sync ? { syncAfter: (step: number) => syncsAfter(plan, perEpoch, step).sync !== undefined } : {};
  const sharded =
    plan.shard && o.checkpoint
      ? { sharded: shardedElastic(ctx, model, dataset, { ...o, checkpoint: o.checkpoint }, plan, load) }
      : {};
  const times = {
    fitStart: performance.now(),
    fitStartWall: r.fitStartWall,
    startStep: r.resumed?.ckpt.body.step ?? 0,
  };
  const e = await runElastic(ctx, o, dataset, minWorkers, times, { load, split, ...validate, ...local, ...sharded });
  if (!e.stopped || askedToStop(e.stopped)) await syncIfBetween(ctx, plan, perEpoch, e.members, e.history);
  const record = await finish(ctx, model, o, plan, e.history, e.members, e.stopped, r.started, e.membership);
  return { record, validation: e.validation };
}

/** Options that cannot work together are refused before anything is sent. */
function refuseWhatCannotWork(o: ResolvedFitOptions, dataset: Dataset, plan: DataParallelPlan): void {
  const refused = refusedPair({
    ...choicesOfPlan(plan),
    checkpoint: o.checkpoint !== undefined,
    accumulate: o.accumulate,
  });
  if (refused) throw new FitAborted(new ConfigError(refused.message, { hint: refused.hint }));
  if (plan.feed === "workers" && !dataset.source) {
    throw new FitAborted(
      new ConfigError(
        `feed "workers" needs a dataset the workers can load themselves; "${dataset.name}" exists only in the driver`,
        {
          hint: 'use datasets.mnist(...), datasets.synthetic(...) or datasets.linear(...), or strategy("data", { feed: "driver" }) to send the data from the driver',
        },
      ),
    );
  }
}

/** Loads the model on a worker as a replica (the first workers, and any that join an elastic fit). */
function replicaLoader(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
  plan: DataParallelPlan,
) {
  const stepMs = ctx.spec.timeouts.stepMs;
  const loadFor = replicaLoadOf(model, dataset, o, plan, ctx.workers.length, stepMs);
  return (w: WorkerHandle, attachments: Tensorlike[]) => {
    const load = loadFor(w.rank);
    // ZeRO-3: no worker ever holds the whole model, not even while it loads.
    if (plan.shard === "parameters") return loadInParts(w, model, load, attachments, { timeoutMs: stepMs });
    return w.channel.request(load, "loaded", { timeoutMs: stepMs, waitingFor: "the model to load", attachments });
  };
}

/** Every replica built what the driver has: the same gradient length and, fed by workers, the same dataset. */
function checkLoaded<L extends { msg: { gradientLength: number; datasetSize?: number | undefined } }>(
  loaded: readonly L[],
  dataset: Dataset,
  plan: DataParallelPlan,
): readonly L[] {
  if (plan.feed === "workers") {
    const sizes = loaded.map((l) => l.msg.datasetSize);
    if (sizes.some((s) => s !== dataset.size)) {
      throw new DataError(
        `workers loaded datasets of ${sizes.join(", ")} samples; the driver's "${dataset.name}" has ${dataset.size}`,
        {
          hint: "install the same meshtrain and mnist versions on every worker",
        },
      );
    }
  }
  refuseOtherGradients(
    loaded.map((l) => l.msg.gradientLength),
    plan.model.trainableParamCount,
  );
  return loaded;
}

/** One step: each replica's slice of the global batch, sent by the driver (in-graph) or read by the worker (between-graph). */
function issueStep(
  ctx: FitContext,
  dataset: Dataset,
  plan: DataParallelPlan,
  fitStartWall: number,
  at: BatchAt,
  also: { sync?: "after"; overlap?: boolean },
): IssuedStep {
  const { step, epoch, order, start, end } = at;
  const rate = { ...(at.learningRate !== undefined ? { learningRate: at.learningRate } : {}), ...also };
  const ranges = replicaRanges(plan.batch, start, end);
  const shares = ranges.map((r) => r.share);
  const requests = ctx.workers.map((w, r) => {
    const range = { start: ranges[r]!.start, end: ranges[r]!.end };
    const waiting = { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: `step ${step}` };
    if (plan.feed === "workers")
      return w.channel.request({ type: "step", step, epoch, weight: shares[r]!, range, ...rate }, "stepDone", waiting);
    const batch = dataset.gather(order, range.start, range.end);
    return w.channel.request({ type: "step", step, epoch, weight: shares[r]!, ...rate }, "stepDone", {
      ...waiting,
      attachments: batchAttachments(batch),
    });
  });
  return {
    samples: end - start,
    done: Promise.all(requests),
    summarize: (replies) => replicasStep(replies, ctx.workers, shares, fitStartWall),
  };
}

/** Checks the replicas agree, gives the model their weights, and releases them. */
async function finish(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: DataParallelPlan & PlanMethods,
  history: StepRecord[],
  members: readonly WorkerHandle[],
  stopped: FitAborted | undefined,
  started: number,
  membership?: MembershipChange[],
): Promise<RunRecord> {
  // Asked to stop (AbortSignal, interrupt): the replicas agree at the last whole step, and the model takes those weights, as model.fit's would.
  if (stopped && !askedToStop(stopped)) {
    await release(ctx, members);
    throw stopped;
  }
  await checkIdentical(ctx, members, "the model", history.length);
  // ZeRO-3 replicas gather the weights together, a bucket at a time: every one is asked.
  const [weights] = await fetchWeightsOf(
    ctx,
    plan.shard === "parameters" ? members : [members[0]!],
    "the trained weights",
  );
  setModelWeights(model, weights!);
  const memory = await release(ctx, members);
  if (stopped) throw stopped;
  return {
    history,
    plan,
    workers: ctx.workers.map((w) => w.snapshot()),
    seed: o.seed,
    epochs: o.epochs,
    wallMs: performance.now() - started,
    ...(membership ? { membership } : {}),
    ...(memory.length ? { memory } : {}),
  };
}
