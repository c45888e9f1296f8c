import * as tf from "@tensorflow/tfjs";
import type { WorkerHandle } from "../cluster/worker-handle";
import type { Dataset } from "../data/dataset";
import { DataError, ModelError, ReplicaDivergenceError, WorkerLostError, type MeshtrainError } from "../errors/errors";
import { epochOrder, globalBatch, stepsPerEpoch } from "../plan/batches";
import type { MessageOf } from "../protocol/messages";
import type { ClusterSpec } from "../config/cluster-spec";
import type { ResolvedFitOptions, StepRecord, WorkerStepRecord } from "../config/fit-options";
import type { Incoming } from "../transport/channel";
import type { Tensorlike } from "../protocol/tensor";
import type { PlanDevice } from "./data/planner";
import type { Wiring } from "./wiring";

/** What a strategy's driver runtime gets from the cluster. */
export interface FitContext {
  readonly spec: ClusterSpec;
  /** In rank order. */
  readonly workers: readonly WorkerHandle[];
  /** Parameter servers (strategy "ps"), in server order. */
  readonly servers: readonly WorkerHandle[];
  /**
   * From now until the fit ends, a lost worker (not a server) is handed to `handler` instead of
   * failing the cluster: for strategies that carry on without it.
   */
  survive(handler: (worker: WorkerHandle, err: MeshtrainError) => void): void;
  /** From now until the fit ends, workers added with cluster.add() are handed to `handler`. */
  admit(handler: (worker: WorkerHandle) => void): void;
  /** Connects the workers (or `members`) as `wiring` says (kept as is when it is already so). */
  connect(wiring: Wiring, o?: { members?: readonly WorkerHandle[]; generation?: number }): Promise<void>;
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

/** A worker's device as plans see it: what it reported when it joined, and the driver's link to it. */
export function devicesOf(w: WorkerHandle): PlanDevice {
  return {
    backend: w.info?.backend ?? "?",
    device: w.info?.device ?? "?",
    memoryBytes: w.info?.memoryBytes ?? 0,
    gflops: w.info?.gflops ?? 0,
    kernelOverheadUs: w.info?.kernelOverheadUs ?? 0,
    linkBytesPerSecond: w.linkBytesPerSecond,
    linkLatencyMs: w.linkLatencyMs,
  };
}

/** Waits for one reply per request; a lost worker is the error reported, whatever else failed. */
export function awaitAll(ctx: FitContext): <T>(requests: Array<Promise<T>>) => Promise<T[]> {
  return async <T>(requests: Array<Promise<T>>): Promise<T[]> => {
    requests.forEach((r) => r.catch(() => undefined));
    try {
      return await ctx.guard(Promise.all(requests));
    } catch (err) {
      // A peer's collective error or a closed channel is often the echo of a worker the cluster
      // is about to declare lost (with its exit code, or its silence): wait for that.
      throw (await ctx.lossWithin(Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500))) ?? err;
    }
  };
}

/** A model that fails to load on the workers leaves them idle and consistent: not fatal. */
export async function loadEverywhere<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof WorkerLostError) throw err;
    throw new FitAborted(err);
  }
}

/** Host copies of tensors, for attachments. */
export function hostCopies(ts: readonly tf.Tensor[]): Tensorlike[] {
  return ts.map((w) => ({
    data: w.dtype === "int32" ? Int32Array.from(w.dataSync() as Int32Array) : Float32Array.from(w.dataSync() as Float32Array),
    shape: [...w.shape],
  }));
}

export function setModelWeights(model: tf.LayersModel, weights: readonly Tensorlike[]): void {
  const current = model.weights;
  if (current.length !== weights.length) {
    throw new ModelError(`the workers returned ${weights.length} weights for a model with ${current.length}`);
  }
  const tensors = weights.map((t, i) => tf.tensor(t.data, [...t.shape], current[i]!.dtype));
  model.setWeights(tensors);
  tf.dispose(tensors);
}

/** Replicas that must hold identical weights are checked by SHA-256 digests. */
export async function checkIdentical(ctx: FitContext, group: readonly WorkerHandle[], what: string, steps: number): Promise<void> {
  const all = awaitAll(ctx);
  const digests = await all(group.map((w) => w.channel.request({ type: "digest" }, "digestReply", { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: "a weights digest" })));
  const distinct = new Set(digests.map((d) => d.msg.digest));
  if (distinct.size !== 1) {
    throw new ReplicaDivergenceError(`after ${steps} steps the ${group.length} replicas of ${what} hold ${distinct.size} different sets of weights`, {
      hint: "this is a meshtrain bug; please report it with the model and options",
    });
  }
}

export function checkShapes(model: tf.LayersModel, dataset: Dataset, o: ResolvedFitOptions): void {
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

/** The rank whose computation ended last (the first such, on a tie). */
export function straggler(ends: ReadonlyArray<{ rank: number; end: number }>): number {
  let worst = ends[0]!;
  for (const e of ends) if (e.end > worst.end) worst = e;
  return worst.rank;
}

export type StepDone = Incoming<MessageOf<"stepDone">>;

/** One worker's part of a whole-model step (data parallelism, parameter servers), on the driver's clock. */
export function workerStep(r: StepDone, w: WorkerHandle, fitStartWall: number): WorkerStepRecord {
  const m = r.msg;
  return {
    rank: w.rank,
    computeMs: m.computeMs + m.applyMs,
    commMs: m.commMs,
    waitMs: m.waitMs,
    applyMs: m.applyMs,
    ...(m.slowdownMs ? { slowdownMs: m.slowdownMs } : {}),
    startMs: m.startedAt - w.clockOffsetMs - fitStartWall,
  };
}

/** When a worker's computation of a step ended, on the driver's clock: who the others waited for. */
export function computeEnd(r: StepDone, w: WorkerHandle): { rank: number; end: number } {
  return { rank: w.rank, end: r.msg.startedAt - w.clockOffsetMs + (r.msg.ps?.pullMs ?? 0) + r.msg.computeMs };
}

/** One step sent to the workers: its replies, and how to turn them into the step's record. */
export interface IssuedStep {
  samples: number;
  done: Promise<StepDone[]>;
  summarize(replies: StepDone[]): Pick<StepRecord, "loss" | "workers" | "straggler"> & Partial<Pick<StepRecord, "bubble">>;
}

/** Steps whose data is sent before the previous ones finish, so workers never wait for input. */
const STEPS_IN_FLIGHT = 2;

/**
 * The step loop every strategy shares: for each epoch and each global batch, `issue` sends the
 * step to the workers; replies become StepRecords (onStep is called with each). An exception
 * from onStep stops the loop after the steps already sent, and is rethrown as FitAborted.
 */
export async function runSteps(
  ctx: FitContext,
  o: ResolvedFitOptions,
  dataset: Dataset,
  issue: (step: number, epoch: number, order: Uint32Array | null, start: number, end: number) => IssuedStep,
  more: {
    /** Steps before this one were done by an earlier fit (resuming from a checkpoint). */
    startStep?: number;
    /** Called with no step in flight, every `every` steps and after the last: the workers' state is that of `stepsDone` steps. */
    checkpoint?: { every: number; save(stepsDone: number): Promise<void> };
  } = {},
): Promise<{ history: StepRecord[]; callbackError: FitAborted | undefined }> {
  const all = awaitAll(ctx);
  const history: StepRecord[] = [];
  const perEpoch = stepsPerEpoch(dataset.size, o.batchSize);
  let lastEnd = performance.now();
  const fitStart = lastEnd;
  const inFlight: Array<{ step: number; epoch: number; issued: IssuedStep }> = [];
  let callbackError: FitAborted | undefined;
  const record = async (): Promise<void> => {
    const f = inFlight.shift()!;
    ctx.setStep(f.step);
    const [replies] = await all([f.issued.done]);
    const now = performance.now();
    const rec: StepRecord = { step: f.step, epoch: f.epoch, samples: f.issued.samples, ms: now - lastEnd, endMs: now - fitStart, ...f.issued.summarize(replies!) };
    lastEnd = now;
    history.push(rec);
    try {
      o.onStep?.(rec);
    } catch (err) {
      callbackError ??= new FitAborted(err);
    }
  };
  let step = 0;
  const startStep = more.startStep ?? 0;
  let saved = startStep;
  const save = async (): Promise<void> => {
    while (inFlight.length > 0) await record();
    if (callbackError || !more.checkpoint || step === saved) return;
    ctx.setStep(step);
    await more.checkpoint.save(step);
    saved = step;
  };
  try {
    for (let epoch = 0; epoch < o.epochs && !callbackError; epoch++) {
      if ((epoch + 1) * perEpoch <= startStep) {
        step += perEpoch;
        continue;
      }
      const order = epochOrder(dataset.size, o.shuffle, o.seed, epoch);
      for (let i = 0; i < perEpoch && !callbackError; i++, step++) {
        if (step < startStep) continue;
        if (more.checkpoint && step > startStep && step % more.checkpoint.every === 0) await save();
        const [start, end] = globalBatch(dataset.size, o.batchSize, i);
        const issued = issue(step, epoch, order, start, end);
        issued.done.catch(() => undefined);
        inFlight.push({ step, epoch, issued });
        if (inFlight.length >= STEPS_IN_FLIGHT) await record();
      }
    }
    while (inFlight.length > 0) await record();
    await save();
  } finally {
    ctx.setStep(undefined);
  }
  return { history, callbackError };
}

/** Tells every worker the fit is over (they drop the model). */
export async function releaseAll(ctx: FitContext): Promise<void> {
  await awaitAll(ctx)(ctx.workers.map((w) => w.channel.request({ type: "release" }, "released", { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor: "release" })));
}
