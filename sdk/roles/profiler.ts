import * as os from "node:os";
import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../errors/errors";
import { estimateReplicaMemory, formatBytes, memoryTotal } from "../plan/memory";
import { summarizeModel } from "../plan/model-summary";
import type { LossName } from "../protocol/loss-names";
import type { MessageOf } from "../protocol/messages";
import type { Tensorlike } from "../protocol/tensor";
import { DataReplica } from "./data/replica";
import { elementCount } from "../protocol/tensor";
import { buildModel } from "../model/model-io";

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

async function typical(run: () => unknown): Promise<number> {
  await run();
  const times: number[] = [];
  const t0 = performance.now();
  while (times.length < MAX_REPEATS && (times.length < MIN_REPEATS || performance.now() - t0 < SPAN_MS)) {
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
 * runs them (TF.js autodiff; the gradient of the layer's input too, except for the first layer,
 * whose input needs none), and a data-parallel replica's whole step. With `sharedForMs`, only
 * the replica step's mean over that window, while the driver has other workers step beside it.
 */
export async function profileModel(msg: MessageOf<"profile">, memoryCapBytes: number | null): Promise<Profiled> {
  if (msg.sharedForMs !== undefined) {
    const model = await buildModel(msg.topology, "initial");
    const shapes = { inShape: model.inputs[0]!.shape.slice(1) as number[], outShape: model.outputs[0]!.shape.slice(1) as number[] };
    model.dispose();
    const batches = msg.batches.slice(0, 1);
    return { batches, layers: [], ...(await replicaStepTimes({ ...msg, batches }, shapes, (run) => meanOver(run, msg.sharedForMs!))) };
  }
  const { layers, shapes } = await layerTimes(msg, memoryCapBytes);
  // One model at a time: the replica builds its own once the layers' model is gone.
  return { batches: msg.batches, layers, ...(await replicaStepTimes(msg, shapes)) };
}

type SampleShapes = { inShape: number[]; outShape: number[] };

async function layerTimes(msg: MessageOf<"profile">, memoryCapBytes: number | null): Promise<{ layers: Profiled["layers"]; shapes: SampleShapes }> {
  const model = await buildModel(msg.topology, "initial");
  try {
    refuseIfTooBig(model, msg, memoryCapBytes);
    const layers = model.layers.filter((l) => l.getClassName() !== "InputLayer");
    const times = layers.map(() => ({ forwardMs: [] as number[], backwardMs: [] as number[] }));
    const inShape = model.inputs[0]!.shape.slice(1) as number[];
    for (const b of msg.batches) {
      let h = tf.randomNormal([b, ...inShape]);
      for (const [i, l] of layers.entries()) {
        const input = h;
        const forwardMs = await typical(() => settle(tf.tidy(() => [l.apply(input) as tf.Tensor])));
        const both = await typical(() => settle(tf.tidy(() => backward(l, input, i > 0))));
        times[i]!.forwardMs.push(forwardMs);
        times[i]!.backwardMs.push(Math.max(0, both - forwardMs));
        h = tf.tidy(() => l.apply(input) as tf.Tensor);
        input.dispose();
      }
      h.dispose();
    }
    return { layers: times, shapes: { inShape, outShape: model.outputs[0]!.shape.slice(1) as number[] } };
  } finally {
    model.dispose();
  }
}

/** A model whose step would not fit this worker's memory is not timed here (a pipeline's plan then predicts from FLOPs). */
function refuseIfTooBig(model: tf.LayersModel, msg: MessageOf<"profile">, memoryCapBytes: number | null): void {
  const batch = Math.max(...msg.batches);
  const need = memoryTotal(estimateReplicaMemory(summarizeModel(model), { batchSize: batch, optimizer: msg.optimizer }));
  const cap = Math.min(memoryCapBytes ?? Infinity, os.totalmem());
  if (need > cap) {
    throw new ModelError(`the whole model needs ${formatBytes(need)} for a step of ${batch} samples, above the ${formatBytes(cap)} this worker may use, so it was not timed here`);
  }
}

/** The layer's forward and backward: gradients of its weights, and of its input when a layer before needs it. Returns what to wait for. */
function backward(l: tf.layers.Layer, input: tf.Tensor, inputGradient: boolean): tf.Tensor[] {
  const x = inputGradient ? tf.variable(input, true) : input;
  try {
    const uses = l.trainableWeights.length > 0 || inputGradient;
    if (!uses) return [l.apply(x) as tf.Tensor];
    const r = tf.variableGrads(() => (l.apply(x) as tf.Tensor).sum() as tf.Scalar);
    return Object.values(r.grads);
  } finally {
    if (x !== input) x.dispose();
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

/** A replica's step at each batch, on random inputs and labels of the loss's kind. */
async function replicaStepTimes(msg: MessageOf<"profile">, { inShape, outShape }: SampleShapes, time: (run: () => unknown) => Promise<number> = typical): Promise<Pick<Profiled, "replicaStepMs" | "replicaStep">> {
  const replica = await DataReplica.load({ type: "load", v: msg.v, id: msg.id, role: "replica", topology: msg.topology, optimizer: msg.optimizer, loss: msg.loss, replicaBatch: Math.max(...msg.batches), stepTimeoutMs: 60_000, attachments: [] }, "initial");
  try {
    const alone = (data: Float32Array) => Promise.resolve({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
    const replicaStepMs: number[] = [];
    for (const b of msg.batches) {
      const x: Tensorlike = { data: Float32Array.from({ length: b * elementCount(inShape) }, () => Math.random()), shape: [b, ...inShape] };
      const y = labels(msg.loss, b, outShape);
      replicaStepMs.push(await time(() => replica.train(1, x, y, alone)));
    }
    return { replicaStepMs, replicaStep: replica.loaded.replicaStep ?? { native: false, why: "the replica did not say" } };
  } finally {
    replica.dispose();
  }
}

/** Labels of the shape and kind the loss takes: one class per row for the crossentropies, values in [0, 1) otherwise. */
function labels(loss: LossName, b: number, outShape: readonly number[]): Tensorlike {
  const classes = outShape[outShape.length - 1] ?? 1;
  if (loss === "sparseCategoricalCrossentropy") return { data: Float32Array.from({ length: b }, (_, i) => i % classes), shape: [b, 1] };
  const data = new Float32Array(b * elementCount(outShape));
  if (loss === "categoricalCrossentropy") for (let r = 0; r < data.length / classes; r++) data[r * classes + (r % classes)] = 1;
  else for (let i = 0; i < data.length; i++) data[i] = Math.random();
  return { data, shape: [b, ...outShape] };
}
