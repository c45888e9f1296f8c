import { updatesInPlace, type OptimizerSpec } from "../protocol/optimizer-spec";
import type { LayerSummary, ModelSummary } from "./model-summary";
import { perSample } from "./per-sample";

/** What sharded data parallelism divides among the replicas: ZeRO stage 1, 2 or 3. */
export type ShardStage = "optimizer" | "gradients" | "parameters";

/** A shard stage's ZeRO number, as the field names them: optimizer 1, gradients 2, parameters 3. */
export function zeroStage(shard: ShardStage): 1 | 2 | 3 {
  return shard === "optimizer" ? 1 : shard === "gradients" ? 2 : 3;
}

/** Bytes a replica needs, by category. Float32 everywhere. An estimate, and labelled as one. */
export interface MemoryEstimate {
  paramsBytes: number;
  gradientBytes: number;
  /** Optimizer slots per trainable parameter: sgd 0, momentum 1, adam 2, rmsprop 2 (3 centered). */
  optimizerBytes: number | null;
  /** Layer outputs kept for the backward pass, for the batch given, and the convolutions' column buffer. */
  activationBytes: number | null;
  /** What any fit grows the runtime by besides these arrays (RUNTIME_GROWTH_BYTES). */
  runtimeGrowthBytes: number;
}

/**
 * What a fit grows a worker by besides its training arrays, whatever the model: the code
 * compiled for its step, the model's and the replica's objects, small buffers. Measured, not
 * derived: a model of a few weights, trained as a worker trains and measured as a fit measures
 * (above the idle process, V8's young generation as the fit had it), grew by 2.2-2.6 MiB
 * on Node 20 (`node --expose-gc dist/bench/zoo/tfjs-zoo.js runtime native 8 20 0`). Without
 * it the smallest models' peaks were 2-3x their estimates.
 */
export const RUNTIME_GROWTH_BYTES = Math.round(2.4 * 2 ** 20);

/** Every category of the estimate together (unknown ones count as 0). */
export function memoryTotal(e: MemoryEstimate): number {
  return e.paramsBytes + e.gradientBytes + (e.optimizerBytes ?? 0) + (e.activationBytes ?? 0) + e.runtimeGrowthBytes;
}

export function optimizerSlots(spec: OptimizerSpec): number {
  switch (spec.name) {
    case "sgd":
      return 0;
    case "momentum":
      return 1;
    case "adam":
      return 2;
    case "rmsprop":
      return spec.centered ? 3 : 2;
    case "adagrad":
      return 1;
    case "adadelta":
    case "adamax":
      return 2;
  }
}

/**
 * How many output-sized buffers TF.js's autograd keeps for a layer until the backward pass,
 * counted on TF.js's CPU backend (test/unit/memory-estimate.test.ts measures it): a dense or
 * convolution layer keeps its product and, with a non-linear activation, the biased sum and the
 * activation too; softmax two; dropout its mask and scaled copies; reshapes share their input.
 */
export function keptCopies(l: Pick<LayerSummary, "className" | "activation">): number {
  switch (l.className) {
    case "Flatten":
    case "Reshape":
    case "InputLayer":
      return 0;
    case "Dropout":
    case "SpatialDropout1D":
      return 4;
    case "MaxPooling1D":
    case "MaxPooling2D":
    case "AveragePooling1D":
    case "AveragePooling2D":
      return 1;
    default:
      if (l.activation === undefined || l.activation === "linear") return 1;
      return l.activation === "softmax" ? 2 : 3;
  }
}

/** Elements autograd keeps per sample for layers `ls` (their outputs, times the copies each keeps). */
export function keptElementsPerSample(ls: readonly LayerSummary[]): number {
  return ls.reduce(
    (n, l) =>
      n +
      (l.nested
        ? keptElementsPerSample(l.nested.layers) * l.nested.positions
        : (recurrentKept(l) ?? keptCopies(l) * perSample(l.outputShape))),
    0,
  );
}

/**
 * What TF.js's autograd keeps per sample for a recurrent layer, which runs its cell once a time
 * step: each step's gates, their activations and slices of the weights. Counted on TF.js's CPU
 * backend for u units over T steps of f features (test/unit/memory-estimate.test.ts checks
 * them): LSTM 30.6u + 2f a step, 3u more where it returns the sequence; GRU 28u + 2f (and slices of
 * its recurrent kernel, 2.9u^2 a step for the whole batch, left out: 7% at u 20 and batch 32);
 * SimpleRNN 4.7u + f. Null for other layers.
 */
function recurrentKept(l: LayerSummary): number | null {
  const steps = l.inputShape[1] ?? 1;
  const f = l.inputShape[l.inputShape.length - 1] ?? 1;
  const u = l.outputShape[l.outputShape.length - 1] ?? 1;
  const sequence = l.outputShape.length === 3 ? 3 * u : 0;
  switch (l.className) {
    case "LSTM":
      return Math.round(steps * (30.6 * u + 2 * f + sequence));
    case "GRU":
      return Math.round(steps * (28 * u + 2 * f + sequence));
    case "SimpleRNN":
      return Math.round(steps * (4.7 * u + f + sequence));
    default:
      return null;
  }
}

/** Elements autograd keeps per sample for the whole model. */
export function activationElementsPerSample(model: ModelSummary): number {
  return keptElementsPerSample(model.layers);
}

/** The column buffer's cap in meshtrain's native convolution kernels, in elements: enough for several images, so each GEMM is large, but bounded (16 MiB). */
export const CONV_COLUMNS_CAP = (16 * 1024 * 1024) / 4;

/**
 * The column buffer (im2col) meshtrain's native kernels lower a convolution into, one for all
 * layers: its largest Conv2D's columns for the whole batch, capped at 16 MiB (never below one
 * image's). A convolution of `out` outputs a sample costs 2 kh kw cin FLOPs an output plus one
 * for the bias (flops.ts), which gives its kh kw cin columns for each of its outH outW positions.
 */
export function convColumnsBytes(model: Pick<ModelSummary, "layers">, batchSize: number): number {
  const per = model.layers
    .filter((l) => l.className === "Conv2D")
    .map((l) => {
      const out = perSample(l.outputShape);
      const channels = l.outputShape[l.outputShape.length - 1] ?? 1;
      return Math.max(0, Math.round((l.flopsPerSample - out) / (2 * channels)));
    });
  return 4 * Math.max(0, ...per.map((p) => Math.min(p * batchSize, Math.max(p, CONV_COLUMNS_CAP))));
}

/** The trainable weights of the model's largest layer, in bytes: what ZeRO-3 gathers whole at a time. */
export function largestLayerBytes(model: Pick<ModelSummary, "layers">): number {
  return Math.max(0, ...model.layers.map((l) => l.trainableParams * 4));
}

/**
 * A replica's estimate sharded over `n` replicas: ZeRO-1 ("optimizer") divides the optimizer's
 * state; ZeRO-2 ("gradients") the gradient too (one buffer the size of the largest bucket of
 * layers, `largestLayer`, for its reduce-scatters), keeping the whole weights (and, where the
 * optimizer does not update in place, a copy of its part that the optimizer updates); ZeRO-3
 * ("parameters") the weights too, plus the largest bucket's weights gathered whole. With
 * `overlap` each of those buffers is held twice.
 */
export function shardedMemory(
  e: MemoryEstimate,
  shard: ShardStage | null,
  n: number,
  largestLayer: number,
  optimizer?: OptimizerSpec,
  overlap = false,
): MemoryEstimate {
  if (!shard || n <= 1) return e;
  const optimizerBytes = e.optimizerBytes === null ? null : Math.ceil(e.optimizerBytes / n);
  if (shard === "optimizer") return { ...e, optimizerBytes };
  // With overlap a second buffer of each kind: the next unit's gather or gradient while one is in flight.
  const buffers = overlap ? 2 : 1;
  const gradientBytes = Math.ceil(e.gradientBytes / n) + buffers * largestLayer;
  if (shard === "gradients")
    return {
      ...e,
      optimizerBytes,
      gradientBytes,
      paramsBytes: e.paramsBytes + (updatesInPlace(optimizer) ? 0 : Math.ceil(e.gradientBytes / n)),
    };
  return { ...e, optimizerBytes, gradientBytes, paramsBytes: Math.ceil(e.paramsBytes / n) + buffers * largestLayer };
}

/**
 * The arrays meshtrain's native step plans for a model (its compiled schedule at the model's
 * input shapes): values, gradients, saved and temporary arrays, per sample and fixed. Where a
 * model trains by it, these are its activations, counted as the step allocates them.
 */
export interface NativeMemory {
  bytesPerSample: number;
  fixedBytes: number;
}

export function estimateReplicaMemory(
  model: ModelSummary,
  o: { batchSize?: number; optimizer?: OptimizerSpec; native?: NativeMemory | null },
): MemoryEstimate {
  const b = o.batchSize;
  const activations =
    b === undefined
      ? null
      : o.native
        ? o.native.bytesPerSample * b + o.native.fixedBytes
        : activationElementsPerSample(model) * 4 * b;
  return {
    paramsBytes: model.paramCount * 4,
    gradientBytes: model.trainableParamCount * 4,
    optimizerBytes: o.optimizer ? model.trainableParamCount * 4 * optimizerSlots(o.optimizer) : null,
    activationBytes: activations === null ? null : activations + convColumnsBytes(model, b!),
    runtimeGrowthBytes: RUNTIME_GROWTH_BYTES,
  };
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v >= 100 || u === 0 ? 0 : 1)} ${units[u]}`;
}

/** The estimate by category, as messages give it: "3.0 MiB parameters, ..., 2.4 MiB the runtime's own growth". */
export function estimateParts(e: MemoryEstimate, samples: number, optimizerNote = ""): string {
  const parts = [
    `${formatBytes(e.paramsBytes)} parameters`,
    `${formatBytes(e.gradientBytes)} gradients`,
    `${formatBytes(e.optimizerBytes ?? 0)} optimizer state${optimizerNote}`,
    `${formatBytes(e.activationBytes ?? 0)} activations for ${samples} samples`,
    `${formatBytes(e.runtimeGrowthBytes)} the runtime's own growth`,
  ];
  return parts.join(", ");
}
