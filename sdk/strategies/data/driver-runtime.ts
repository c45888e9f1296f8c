import * as tf from "@tensorflow/tfjs";
import type { WorkerHandle } from "../../cluster/worker-handle";
import type { Dataset } from "../../data/dataset";
import { ConfigError, DataError, ModelError, ReplicaDivergenceError, WorkerLostError, type MeshtrainError } from "../../errors/errors";
import type { RunRecord } from "../../cluster/training-run";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../plan/batches";
import { summarizeModel } from "../../plan/model-summary";
import type { ClusterSpec } from "../../spec/cluster-spec";
import type { ResolvedFitOptions, StepRecord } from "../../spec/fit-options";
import type { Tensorlike } from "../../transport/channel";
import { dataWiring, type Wiring } from "../wiring";
import { planDataParallel } from "./planner";
import { wallClock } from "../../util/clock";

/** What a strategy's driver runtime gets from the cluster. */
export interface FitContext {
  readonly spec: ClusterSpec;
  /** In rank order. */
  readonly workers: readonly WorkerHandle[];
  /** Connects the workers as `wiring` says (kept as is when it is already so). */
  connect(wiring: Wiring): Promise<void>;
  /** Rejects with the loss of a worker as soon as one is lost. */
  guard<T>(p: Promise<T>): Promise<T>;
  /** Resolves with the cluster's loss of a worker: at once if it happened, else if it does within `ms`. */
  lossWithin(ms: number): Promise<MeshtrainError | undefined>;
  setStep(step: number | undefined): void;
}

/**
 * Thrown by a runtime for a failure that left every worker in a known state (bad input found
 * before training, a model that did not load, an exception from the user's onStep): the
 * cluster stays usable and the user gets `error` itself.
 */
export class FitAborted {
  constructor(readonly error: unknown) {}
}

/** Steps whose data is sent before the previous ones finish, so workers never wait for input. */
const STEPS_IN_FLIGHT = 2;

export async function fitDataParallel(
  ctx: FitContext,
  model: tf.LayersModel,
  dataset: Dataset,
  o: ResolvedFitOptions,
): Promise<RunRecord> {
  const started = performance.now();
  let plan;
  const feed = ctx.spec.strategy.feed;
  try {
    checkShapes(model, dataset, o);
    if (feed === "workers" && !dataset.source) {
      throw new ConfigError(`feed "workers" needs a dataset the workers can load themselves; "${dataset.name}" exists only in the driver`, {
        hint: 'use datasets.mnist(...) or datasets.synthetic(...), or strategy("data", { feed: "driver" }) to send the data from the driver',
      });
    }
    plan = planDataParallel(ctx.spec, summarizeModel(model), {
      batchSize: o.batchSize,
      optimizer: o.optimizer,
      devices: ctx.workers.map((w) => ({ backend: w.info?.backend ?? "?", device: w.info?.device ?? "?", memoryBytes: w.info?.memoryBytes ?? 0 })),
    });
  } catch (err) {
    throw new FitAborted(err);
  }
  const workers = ctx.workers;
  const n = workers.length;
  const stepMs = ctx.spec.timeouts.stepMs;

  /** Waits for one reply per worker; a lost worker is the error reported, whatever else failed. */
  const all = async <T>(requests: Array<Promise<T>>): Promise<T[]> => {
    requests.forEach((r) => r.catch(() => undefined));
    try {
      return await ctx.guard(Promise.all(requests));
    } catch (err) {
      // A peer's all-reduce error or a closed channel is often the echo of a worker the
      // cluster is about to declare lost (with its exit code, or its silence): wait for that.
      throw (await ctx.lossWithin(Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500))) ?? err;
    }
  };

  await ctx.connect(dataWiring(n));
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights: Tensorlike[] = model.getWeights().map((w) => ({
    data: w.dtype === "int32" ? Int32Array.from(w.dataSync() as Int32Array) : Float32Array.from(w.dataSync() as Float32Array),
    shape: [...w.shape],
  }));
  const loaded = await loadEverywhere(() => all(
    workers.map((w) =>
      w.channel.request({ type: "load", topology, optimizer: o.optimizer, loss: o.loss, ...(feed === "workers" ? { data: { source: dataset.source!, shuffle: o.shuffle, seed: o.seed } } : {}) }, "loaded", {
        timeoutMs: stepMs,
        waitingFor: "the model to load",
        attachments: weights,
      }),
    ),
  ));
  if (feed === "workers") {
    const sizes = loaded.map((l) => l.msg.datasetSize);
    if (sizes.some((n) => n !== dataset.size)) {
      throw new DataError(`workers loaded datasets of ${sizes.join(", ")} samples; the driver's "${dataset.name}" has ${dataset.size}`, {
        hint: "install the same meshtrain and mnist versions on every worker",
      });
    }
  }
  const lengths = new Set(loaded.map((l) => l.msg.gradientLength));
  if (lengths.size !== 1 || !lengths.has(plan.model.trainableParamCount)) {
    throw new ModelError(
      `workers built gradients of ${[...lengths].join(", ")} elements; the driver's model has ${plan.model.trainableParamCount} trainable parameters`,
    );
  }

  const history: StepRecord[] = [];
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  let lastEnd = performance.now();
  const fitStart = lastEnd;
  const fitStartWall = wallClock();
  type Done = { msg: { loss: number; computeMs: number; commMs: number; waitMs: number; applyMs: number; startedAt: number } };
  const inFlight: Array<{ step: number; epoch: number; samples: number; weights: number[]; done: Promise<Done[]> }> = [];

  let callbackError: FitAborted | undefined;
  const record = async (): Promise<void> => {
    const f = inFlight.shift()!;
    ctx.setStep(f.step);
    const replies = await all([f.done]).then((r) => r[0]!);
    const now = performance.now();
    const rec: StepRecord = {
      step: f.step,
      epoch: f.epoch,
      loss: replies.reduce((a, r, i) => a + f.weights[i]! * r.msg.loss, 0),
      samples: f.samples,
      ms: now - lastEnd,
      endMs: now - fitStart,
      workers: replies.map((r, rank) => ({
        rank,
        computeMs: r.msg.computeMs + r.msg.applyMs,
        commMs: r.msg.commMs,
        waitMs: r.msg.waitMs,
        applyMs: r.msg.applyMs,
        startMs: r.msg.startedAt - workers[rank]!.clockOffsetMs - fitStartWall,
      })),
      straggler: straggler(replies.map((r, rank) => r.msg.startedAt - workers[rank]!.clockOffsetMs + r.msg.computeMs)),
    };
    lastEnd = now;
    history.push(rec);
    try {
      o.onStep?.(rec);
    } catch (err) {
      callbackError ??= new FitAborted(err);
    }
  };

  let step = 0;
  try {
    for (let epoch = 0; epoch < o.epochs; epoch++) {
      const order = feed === "driver" ? epochOrder(dataset.size, o.shuffle, o.seed, epoch) : null;
      for (let i = 0; i < perEpoch && !callbackError; i++, step++) {
        const [start, end] = globalBatch(dataset.size, o.batchSize, i);
        const count = end - start;
        const slices = replicaSlices(count, n);
        const shares = slices.map((s) => s / count);
        let from = start;
        const requests = workers.map((w, r) => {
          const range = { start: from, end: from + slices[r]! };
          from = range.end;
          const waiting = { timeoutMs: stepMs, waitingFor: `step ${step}` };
          // Between-graph: the worker reads its own slice; in-graph: the driver sends it.
          if (feed === "workers") return w.channel.request({ type: "step", step, epoch, weight: shares[r]!, range }, "stepDone", waiting);
          const batch = dataset.gather(order, range.start, range.end);
          return w.channel.request({ type: "step", step, epoch, weight: shares[r]! }, "stepDone", { ...waiting, attachments: [batch.x, batch.y] });
        });
        const done = Promise.all(requests);
        requests.forEach((r) => r.catch(() => undefined));
        done.catch(() => undefined);
        inFlight.push({ step, epoch, samples: count, weights: shares, done });
        if (inFlight.length >= STEPS_IN_FLIGHT) await record();
      }
    }
    while (inFlight.length > 0) await record();
    ctx.setStep(undefined);
    if (callbackError) {
      await all(workers.map((w) => w.channel.request({ type: "release" }, "released", { timeoutMs: stepMs, waitingFor: "release" })));
      throw callbackError;
    }

    // Replicas must hold identical weights; a difference would mean a bug, not noise.
    const digests = await all(workers.map((w) => w.channel.request({ type: "digest" }, "digestReply", { timeoutMs: stepMs, waitingFor: "a weights digest" })));
    const distinct = new Set(digests.map((d) => d.msg.digest));
    if (distinct.size !== 1) {
      throw new ReplicaDivergenceError(`after ${history.length} steps the ${n} replicas hold ${distinct.size} different sets of weights`, {
        hint: "this is a meshtrain bug; please report it with the model and options",
      });
    }
    const [fetched] = await all([workers[0]!.channel.request({ type: "fetchWeights" }, "weights", { timeoutMs: stepMs, waitingFor: "the trained weights" })]);
    setModelWeights(model, fetched!.attachments);
  } finally {
    ctx.setStep(undefined);
  }
  await all(workers.map((w) => w.channel.request({ type: "release" }, "released", { timeoutMs: stepMs, waitingFor: "release" })));
  return { history, plan, workers: workers.map((w) => w.snapshot()), seed: o.seed, epochs: o.epochs, wallMs: performance.now() - started };
}

/** The rank whose forward and backward pass ended last (the first such, on a tie). */
function straggler(ends: number[]): number {
  let worst = 0;
  ends.forEach((e, r) => {
    if (e > ends[worst]!) worst = r;
  });
  return worst;
}

/** A model that fails to load on the workers leaves them idle and consistent: not fatal. */
async function loadEverywhere<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof WorkerLostError) throw err;
    throw new FitAborted(err);
  }
}

function setModelWeights(model: tf.LayersModel, weights: readonly Tensorlike[]): void {
  const current = model.weights;
  if (current.length !== weights.length) {
    throw new ModelError(`the worker returned ${weights.length} weights for a model with ${current.length}`);
  }
  const tensors = weights.map((t, i) => tf.tensor(t.data, [...t.shape], current[i]!.dtype));
  model.setWeights(tensors);
  tf.dispose(tensors);
}

function checkShapes(model: tf.LayersModel, dataset: Dataset, o: ResolvedFitOptions): void {
  if (model.inputs.length !== 1 || model.outputs.length !== 1) {
    throw new ModelError(`the model has ${model.inputs.length} inputs and ${model.outputs.length} outputs; meshtrain trains models with one of each`, {
      hint: "wrap several inputs into one tensor, or train this model with model.fit for now",
    });
  }
  if (dataset.size === 0) throw new DataError(`dataset "${dataset.name}" is empty`);
  const want = model.inputs[0]!.shape.slice(1);
  const got = dataset.x.sampleShape;
  if (want.length !== got.length || want.some((d, i) => d !== null && d !== got[i])) {
    throw new DataError(`the model takes inputs of shape [${want.map((d) => d ?? "?").join(", ")}] but dataset "${dataset.name}" has samples of shape [${got.join(", ")}]`, {
      hint: "reshape the dataset or change the model's inputShape",
    });
  }
  if (o.loss !== "sparseCategoricalCrossentropy") {
    const wantY = model.outputs[0]!.shape.slice(1);
    const gotY = dataset.y.sampleShape;
    if (wantY.length !== gotY.length || wantY.some((d, i) => d !== null && d !== gotY[i])) {
      throw new DataError(`the model outputs shape [${wantY.map((d) => d ?? "?").join(", ")}] but the targets of "${dataset.name}" have shape [${gotY.join(", ")}]`, {
        hint: "one-hot encode the labels to match the output, or use loss sparseCategoricalCrossentropy",
      });
    }
  }
}
