import { machineMemoryBytes } from "../backends/machine-memory";
import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../errors/errors";
import { estimateReplicaMemory, formatBytes, largestLayerBytes, memoryTotal } from "../plan/memory";
import { summarizeModel } from "../plan/model-summary";
import type { MessageOf } from "../protocol/messages";
import { aloneSum, profileReplica } from "./profile-replica";
import { buildModel, tensorOf } from "../model/model-io";
import { zeroInitialized } from "../model/shard-load";
import { feedOf, sampleInput, sampleLabels, type Feed } from "./profile-feed";
import { hookProbe } from "./data/hooks/hook-probes";
import { sumProbe } from "./data/sums/sum-probes";

type Profiled = Omit<MessageOf<"profiled">, "type" | "v" | "re">;

/**
 * Each timing is repeated after a warm-up until it has run this long (at least MIN_REPEATS times,
 * at most MAX_REPEATS), and the median counts: what a step meets while it trains. The fastest of
 * many repeats of a short timing is a lucky one: on a shared VM a layer's median forward at
 * batch 8 to 64 ran 1.2-1.5x its fastest, and plans built from fastest times promised too much.
 */
const SPAN_MS = 30;
const MIN_REPEATS = 5;
const MAX_REPEATS = 21;

async function typical(run: () => unknown, clock: { deadline: number }): Promise<number> {
  // Past the profile's budget: one run, warm-up and all (an estimate that errs slow).
  if (performance.now() >= clock.deadline) {
    const t = performance.now();
    await run();
    return performance.now() - t;
  }
  await run();
  const times: number[] = [];
  const t0 = performance.now();
  while (
    times.length < MAX_REPEATS &&
    (times.length < MIN_REPEATS || performance.now() - t0 < SPAN_MS) &&
    (times.length === 0 || performance.now() < clock.deadline)
  ) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * Mean time of `run` while others compute beside it: steps for `ms` after a warm-up and counts only
 * those that start in the window's last two thirds, since the workers asked at once start a
 * little apart (each builds its model first) and their first steps may not all overlap.
 */
async function meanOver(run: () => unknown, ms: number): Promise<number> {
  await run();
  await run();
  const t0 = performance.now();
  let counted = 0;
  let from = NaN;
  for (;;) {
    const t = performance.now();
    if (t - t0 >= ms && counted > 0) return (t - from) / counted;
    if (t - t0 >= ms / 3) {
      if (counted === 0) from = t;
      counted++;
    }
    await run();
  }
}

/**
 * Times every layer's forward and backward pass alone at each batch size, as a pipeline stage
 * runs them (TF.js autodiff; the gradients of the layer's inputs too, except inputs of the
 * model, which need none), and a data-parallel replica's whole step. With `sharedForMs`, only
 * the replica step's mean over that window, while the driver has other workers step beside it.
 * With `budgetMs`, timings begun after that long run once each, without warm-up: a profile
 * must not cost more than the plan it informs saves.
 */
export async function profileModel(msg: MessageOf<"profile">, memoryCapBytes: number | null): Promise<Profiled> {
  const clock: Clock = { deadline: msg.budgetMs === undefined ? Infinity : performance.now() + msg.budgetMs };
  if (msg.sharedForMs !== undefined) {
    // Read for its inputs alone: zeros for weights cost no memory.
    const model = await buildModel(zeroInitialized(msg.topology), "initial");
    const feed = feedOf(model);
    model.dispose();
    const batches = msg.batches.slice(0, 1);
    return {
      batches,
      layers: [],
      ...(await replicaStepTimes({ ...msg, batches }, feed, (run) => meanOver(run, msg.sharedForMs!))),
    };
  }
  // Built first with zeros for weights, to be checked and read for its inputs: zeros cost no
  // memory until written, so a worker too small for the whole step (a ZeRO-3 replica's) never
  // holds the whole model, and its layers are timed on them. Where the step fits, the layers are
  // timed on the model's own initial weights: on zeros the demo CNN's pooling and convolutions
  // ran 5-20% faster (ties and ReLU's branches).
  let model: tf.LayersModel | null = await buildModel(zeroInitialized(msg.topology), "initial");
  const release = (): void => {
    model?.dispose();
    model = null;
  };
  try {
    const tooBig = stepTooBig(model, msg, memoryCapBytes);
    const feed = feedOf(model);
    const shapes = model.trainableWeights.map((w) => w.shape as number[]);
    if (msg.layers === false) release();
    else if (!tooBig) {
      release();
      model = await buildModel(msg.topology, "initial");
    }
    // The replica step first: data parallelism plans from it alone, so it gets the budget's best.
    const step = tooBig
      ? { replicaStepMs: [], replicaStep: { native: false, why: `not timed: ${tooBig}` } }
      : await replicaStepTimes(msg, feed, (run) => typical(run, clock));
    // The comm hook's own work next (PowerSGD's factors): a data-parallel plan adds it to the step.
    const time = (run: () => Promise<void>) => typical(run, clock);
    const hookMs = msg.hook ? await hookProbe(msg.hook.kind)?.(shapes, msg.hook, time) : undefined;
    // The summing scheme's (a local-SGD sync's: a second replica beside this model, not where a whole step does not fit).
    const sumMs = msg.sum && !tooBig ? await sumProbe(msg.sum.kind)?.(msg, msg.sum, time) : undefined;
    const layers = model ? await layerTimes(model, feed, msg.batches, clock) : [];
    return {
      batches: msg.batches,
      layers,
      ...step,
      ...(hookMs === undefined ? {} : { hookMs }),
      ...(sumMs === undefined ? {} : { sumMs }),
    };
  } finally {
    release();
  }
}

/** When timings stop repeating. */
interface Clock {
  deadline: number;
}

/** Every layer's forward and backward at each batch, on the values its node in the model takes. */
async function layerTimes(
  model: tf.LayersModel,
  feed: Feed,
  batches: readonly number[],
  clock: Clock,
): Promise<Profiled["layers"]> {
  const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer");
  const times = layers.map(() => ({ forwardMs: [] as number[], backwardMs: [] as number[] }));
  const fed = new Set(model.inputs.map((s) => s.id));
  for (const b of batches) {
    // Every symbolic tensor's value at this batch, filled as the layers produce them.
    const values = new Map<number, tf.Tensor>(
      model.inputs.map((s, i) => [s.id, tensorOf(sampleInput(feed.inputs[i]!, b))]),
    );
    try {
      for (const [i, l] of layers.entries()) {
        // A layer's first node in this model is timed: a nested model's first node is its own graph's, whose inputs are not here.
        let timed = false;
        for (const node of l.inboundNodes) {
          const inputs = node.inputTensors.map((t) => values.get(t.id));
          if (inputs.some((t) => t === undefined)) continue;
          const xs = inputs as tf.Tensor[];
          if (!timed) {
            timed = true;
            const forwardMs = await typical(() => settle(tf.tidy(() => outputsOf(l, xs))), clock);
            const both = await typical(
              () =>
                settle(
                  tf.tidy(() =>
                    backward(
                      l,
                      xs,
                      node.inputTensors.map((t) => !fed.has(t.id)),
                    ),
                  ),
                ),
              clock,
            );
            times[i]!.forwardMs.push(forwardMs);
            times[i]!.backwardMs.push(Math.max(0, both - forwardMs));
          }
          const outs = tf.tidy(() => outputsOf(l, xs));
          node.outputTensors.forEach((t, j) => values.set(t.id, outs[j]!));
        }
      }
    } finally {
      tf.dispose([...values.values()]);
    }
  }
  return times;
}

/** A layer applied to its inputs as its node in the model takes them (a merge takes a list), its outputs as a list. */
function outputsOf(l: tf.layers.Layer, xs: tf.Tensor[]): tf.Tensor[] {
  const out = l.apply(xs.length === 1 ? xs[0]! : xs) as tf.Tensor | tf.Tensor[];
  return Array.isArray(out) ? out : [out];
}

/**
 * Why a replica's whole step would not fit this worker's memory (null where it fits). Its layers
 * are still timed one at a time where the weights, the largest layer's gradient and the
 * activations fit (what timing them holds at once): a capped cluster's plans, which weigh
 * stages against ZeRO-2/3 because the whole step does not fit, then predict both from times
 * taken here rather than from FLOPs. Where even that does not fit, the model is not timed here.
 */
function stepTooBig(model: tf.LayersModel, msg: MessageOf<"profile">, memoryCapBytes: number | null): string | null {
  const batch = Math.max(...msg.batches);
  const summary = summarizeModel(model);
  const e = estimateReplicaMemory(summary, { batchSize: batch, optimizer: msg.optimizer });
  const cap = Math.min(memoryCapBytes ?? Infinity, machineMemoryBytes());
  const need = memoryTotal(e);
  if (need <= cap) return null;
  const why = `the whole model needs ${formatBytes(need)} for a step of ${batch} samples, above the ${formatBytes(cap)} this worker may use`;
  const layers = e.paramsBytes + largestLayerBytes(summary) + (e.activationBytes ?? 0) + e.runtimeGrowthBytes;
  if (msg.layers === false || layers > cap) throw new ModelError(`${why}, so it was not timed here`);
  return why;
}

/** The layer's forward and backward: gradients of its weights, and of each input marked as needing one. Returns what to wait for. */
function backward(l: tf.layers.Layer, inputs: tf.Tensor[], needs: boolean[]): tf.Tensor[] {
  const xs = inputs.map((t, k) => (needs[k] ? tf.variable(t, true) : t));
  try {
    if (l.trainableWeights.length === 0 && !needs.some(Boolean)) return outputsOf(l, xs);
    const r = tf.variableGrads(() =>
      outputsOf(l, xs)
        .map((o) => o.sum() as tf.Scalar)
        .reduce((a, o) => tf.add(a, o)),
    );
    return Object.values(r.grads);
  } finally {
    xs.forEach((x, k) => x !== inputs[k] && x.dispose());
  }
}

/** Waits until `ts` are computed (lazy and device backends compute when read), then frees them. */
async function settle(ts: tf.Tensor[]): Promise<void> {
  try {
    for (const t of ts) await t.data();
  } finally {
    tf.dispose(ts);
  }
}

/** A replica's step at each batch, on inputs of the model's kind and labels of the loss's kind. */
async function replicaStepTimes(
  msg: MessageOf<"profile">,
  feed: Feed,
  time: (run: () => unknown) => Promise<number>,
): Promise<Pick<Profiled, "replicaStepMs" | "replicaStep">> {
  const replica = await profileReplica(msg);
  try {
    const replicaStepMs: number[] = [];
    for (const b of msg.batches) {
      const x = feed.inputs.map((input) => sampleInput(input, b));
      const y = feed.outShapes.map((shape, k) => sampleLabels(msg.heads?.[k]?.loss ?? msg.loss, b, shape));
      replicaStepMs.push(await time(() => replica.train(1, x, y, aloneSum)));
    }
    return {
      replicaStepMs,
      replicaStep: replica.loaded.replicaStep ?? { native: false, why: "the replica did not say" },
    };
  } finally {
    replica.dispose();
  }
}
