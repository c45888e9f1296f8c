import type * as tf from "@tensorflow/tfjs";
import { refuseAccumulation } from "../../driver/replica-options";
import { validateThroughStages } from "./validate-stages";
import type { Dataset } from "../../data/dataset";
import { ModelError } from "../../errors/errors";
import { splitOf } from "../../plan/batches";
import type { BatchAt } from "../../driver/epoch-walk";
import type { ResolvedFitOptions } from "../../driver/fit-options";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { measuredBubble } from "./bubble";
import type { RunRecord, WorkerStepRecord } from "../../metrics/records";
import type { PlanMethods, PipelinePlan } from "../../plan/plans";
import { awaitAll, loadEverywhere, releaseAll } from "../../driver/await";
import { checkIdentical } from "../../driver/replicas";
import { fetchWeightsOf, hostCopies, setModelWeights } from "../../driver/model-transfer";
import { runSteps, type IssuedStep } from "../../driver/step-loop";
import { stepOutcome } from "../../driver/step-records";
import type { FitContext, StepDone } from "../../driver/fit-context";
import { checkpointing, restoreOptimizers, resumeIfAsked } from "../../driver/checkpoint/fit-checkpoint";
import { gridWiring } from "../../plan/wiring";
import { modelOrder, stageVariables } from "./stage-weights";
import { topologyOf } from "../../model/topology";

/**
 * Model, pipeline and hybrid parallelism, driven from here. Each step the global batch is split
 * among the R replicas and each replica's share into M micro-batches; stage 0 of a replica gets
 * the micro-batches' inputs, its last stage their targets, and the stages pass activations
 * forward and gradients back among themselves. Every micro-batch's loss is weighted by its share
 * of the global batch, so the accumulated gradient is the global batch's mean gradient, as in
 * single-process training.
 */
export async function fitPipeline(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  given: ResolvedFitOptions,
  plan: PipelinePlan & PlanMethods,
): Promise<RunRecord> {
  const started = performance.now();
  const { resumed, options: o } = resumeIfAsked(given, plan.strategy, model, plan.model, dataset);
  const where = `strategy "${plan.strategy}" (its stages hold parts of the model)`;
  refuseAccumulation(
    o,
    where,
    `a pipeline accumulates over its micro-batches already: raise microBatches (strategy("${plan.strategy}", { microBatches })) and batchSize`,
  );
  const workers = ctx.workers.slice(0, plan.worldSize);
  await ctx.connect(gridWiring(plan.replicas, plan.stages));
  await loadStages(ctx, model, o, plan);
  // Every replica of stage s holds the same optimizer state; replica 0's is saved.
  const holders = plan.stagePlans.map((_, s) => ({
    name: `stage ${s}`,
    from: workers[plan.ranks[0]![s]!]!,
    to: plan.ranks.map((row) => workers[row[s]!]!),
  }));
  if (resumed) await restoreOptimizers(ctx, resumed.ckpt, holders);
  // Replica 0's stages, in order, hold the whole model's weights in the model's order.
  const weightsOf = async (why: string): Promise<Tensorlike[]> =>
    modelOrder(
      model,
      plan.stagePlans,
      await fetchWeightsOf(
        ctx,
        plan.ranks[0]!.map((r) => workers[r]!),
        why,
      ),
    );
  const summary = plan.model;
  const more = {
    ...checkpointing(ctx, o, resumed, {
      strategy: plan.strategy,
      summary,
      dataset,
      holders,
      weights: () => weightsOf("the weights to checkpoint"),
    }),
    ...(o.validation ? { validate: validateThroughStages(ctx, plan, o.validation, o.batchSize) } : {}),
  };
  const fitStartWall = wallClock();
  const issue = (batch: BatchAt): IssuedStep => issueStep(ctx, dataset, plan, fitStartWall, batch);
  const ran = await runSteps(ctx, o, dataset, issue, more);
  return finishStages(ctx, model, o, plan, ran, weightsOf, started);
}

/** After the last step: a stopped fit's workers released; else every stage's replicas checked alike, and the model given the trained weights. */
async function finishStages(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: PipelinePlan & PlanMethods,
  { history, stopped, validation }: Awaited<ReturnType<typeof runSteps>>,
  weightsOf: (why: string) => Promise<Tensorlike[]>,
  started: number,
): Promise<RunRecord> {
  const workers = ctx.workers.slice(0, plan.worldSize);
  if (stopped) {
    await releaseAll(ctx);
    throw stopped;
  }
  if (plan.replicas > 1) {
    for (let s = 0; s < plan.stages; s++)
      await checkIdentical(
        ctx,
        plan.ranks.map((row) => workers[row[s]!]!),
        `stage ${s}`,
        history.length,
      );
  }
  setModelWeights(model, await weightsOf("the trained weights"));
  const memory = await releaseAll(ctx);
  return {
    history,
    plan,
    workers: workers.map((w) => w.snapshot()),
    seed: o.seed,
    epochs: o.epochs,
    wallMs: performance.now() - started,
    ...(validation.length > 0 ? { validation } : {}),
    ...(memory.length ? { memory } : {}),
  };
}

/** Each worker builds its stage's layers with their weights and its part of the schedule. */
async function loadStages(
  ctx: FitContext,
  model: tf.LayersModel,
  o: ResolvedFitOptions,
  plan: PipelinePlan,
): Promise<void> {
  const S = plan.stages;
  const stepMs = ctx.spec.timeouts.stepMs;
  const topology = topologyOf(model);
  const stageWeights = plan.stagePlans.map((st) => hostCopies(stageVariables(model, st).map((v) => v.read())));
  const loaded = await loadEverywhere(() =>
    awaitAll(ctx)(
      ctx.workers.slice(0, plan.worldSize).map((w, rank) => {
        const s = rank % S;
        const st = plan.stagePlans[s]!;
        return w.channel.request(stageLoad(topology, o, plan, s, stepMs), "loaded", {
          timeoutMs: stepMs,
          waitingFor: `stage ${s} (layers [${st.from}, ${st.to})) to load`,
          attachments: stageWeights[s]!,
        });
      }),
    ),
  );
  const stageParams = plan.stagePlans.map((st) =>
    plan.model.layers.slice(st.from, st.to).reduce((n, l) => n + l.trainableParams, 0),
  );
  loaded.forEach((l, rank) => {
    const want = stageParams[rank % S]!;
    const st = plan.stagePlans[rank % S]!;
    if (l.msg.gradientLength !== want) {
      throw new ModelError(
        `worker ${rank} built stage ${rank % S} with ${l.msg.gradientLength} trainable parameters; the driver's model has ${want} in layers [${st.from}, ${st.to})`,
      );
    }
  });
}

/** Stage s's load message: its layers, its feeds and heads, and its part of the schedule. */
function stageLoad(
  topology: Record<string, unknown>,
  o: ResolvedFitOptions,
  plan: PipelinePlan,
  s: number,
  stepMs: number,
): Parameters<FitContext["workers"][number]["channel"]["request"]>[0] {
  const S = plan.stages;
  const st = plan.stagePlans[s]!;
  const microBatchSize = plan.batch?.microBatch ?? Math.ceil(o.batchSize / plan.replicas / plan.microBatches);
  return {
    type: "load",
    role: "stage",
    topology,
    optimizer: o.optimizer,
    loss: o.loss,
    metrics: o.metrics,
    ...(o.classTable && s === S - 1 ? { classWeight: o.classTable } : {}),
    ...(o.heads ? { heads: o.heads } : {}),
    stage: {
      index: s,
      count: S,
      from: st.from,
      to: st.to,
      inputShape: [...st.inputShape],
      feeds: [...st.feeds],
      heads: [...st.heads],
      actions: [...plan.schedule.actions[s]!],
      microBatches: plan.microBatches,
      microBatchSize,
    },
    stepTimeoutMs: stepMs,
  };
}

/**
 * One step: the global batch split among the replicas and each replica's share into
 * micro-batches; each stage takes the model inputs its layers read (stage 0 the input, for most
 * models) and the targets of the outputs they make (the last stage's, for most).
 */
function issueStep(
  ctx: FitContext,
  dataset: Dataset,
  plan: PipelinePlan,
  fitStartWall: number,
  at: BatchAt,
): IssuedStep {
  const { step, epoch, order, start, end } = at;
  const rate = at.learningRate !== undefined ? { learningRate: at.learningRate } : {};
  const S = plan.stages;
  const count = end - start;
  const split = splitOf(plan.batch, count);
  const slices = split.perReplica;
  const requests: Array<Promise<StepDone>> = [];
  let from = start;
  for (let r = 0; r < plan.replicas; r++) {
    const sizes = [...split.micro![r]!];
    const weights = sizes.map((n) => n / count);
    // xs[k][m]: model input k of micro-batch m; ys[k][m]: the targets of output k.
    const xs: Tensorlike[][] = dataset.inputs.map(() => []);
    const ys: Tensorlike[][] = dataset.targets.map(() => []);
    for (const n of sizes) {
      const b = dataset.gather(order, from, from + n);
      b.xs.forEach((t, k) => xs[k]!.push(t));
      b.ys.forEach((t, k) => ys[k]!.push(t));
      from += n;
    }
    for (let s = 0; s < S; s++) {
      const rank = plan.ranks[r]![s]!;
      const st = plan.stagePlans[s]!;
      const attachments = [...st.feeds.flatMap((k) => xs[k]!), ...st.heads.flatMap((k) => ys[k]!)];
      requests[rank] = ctx.workers[rank]!.channel.request(
        { type: "step", step, epoch, weight: slices[r]! / count, micro: { sizes, weights }, ...rate },
        "stepDone",
        { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: `step ${step}`, attachments },
      );
    }
  }
  return {
    samples: count,
    done: Promise.all(requests),
    summarize: (replies) => summarizeStep(ctx, plan, fitStartWall, replies),
  };
}

/** Every stage's timings and actions; the loss is the last stages' (non-last stages report none). */
function summarizeStep(
  ctx: FitContext,
  plan: PipelinePlan,
  fitStartWall: number,
  replies: StepDone[],
): ReturnType<IssuedStep["summarize"]> {
  const S = plan.stages;
  const recs: WorkerStepRecord[] = replies.map((rep, rank) => ({
    rank,
    stage: rank % S,
    replica: Math.floor(rank / S),
    computeMs: rep.msg.computeMs + rep.msg.applyMs,
    commMs: rep.msg.commMs,
    waitMs: rep.msg.waitMs,
    applyMs: rep.msg.applyMs,
    startMs: rep.msg.startedAt - ctx.workers[rank]!.clockOffsetMs - fitStartWall,
    actions: rep.msg.actions ?? [],
    inFlightMax: rep.msg.inFlightMax ?? 0,
    ...(rep.msg.readbackMs !== undefined ? { readbackMs: rep.msg.readbackMs } : {}),
    ...(rep.msg.uploadMs !== undefined ? { uploadMs: rep.msg.uploadMs } : {}),
  }));
  const loss = replies.reduce((a, rep) => a + rep.msg.loss, 0);
  // The pipeline is as slow as its slowest stage: that is who the others wait for.
  const slowest = recs.reduce((w, r) => (r.computeMs > w.computeMs ? r : w), recs[0]!);
  // Last stages weighted their metrics by micro-batch share already, as their loss.
  const outcome = stepOutcome(
    replies,
    recs.map((r) => r.rank),
    replies.map(() => 1),
  );
  return { loss, workers: recs, straggler: slowest.rank, bubble: measuredBubble(recs, S, plan.replicas), ...outcome };
}
