import type { DataPlaneKernels } from "./data-plane-api";
import type { StepKernels } from "./step-kernels-api";

/** The C functions of native/src, as the addon exports them. Arrays are read and written in place. */
export interface NativeAddon extends StepKernels, DataPlaneKernels {
  setThreads(budget: number): void;
  getThreads(): number;
  batchMatMul(
    a: Float32Array,
    b: Float32Array,
    out: Float32Array,
    batch: number,
    aBatchStride: number,
    bBatchStride: number,
    M: number,
    N: number,
    K: number,
    transA: number,
    transB: number,
  ): void;
  biasActivation(
    out: Float32Array,
    bias: Float32Array | null,
    rows: number,
    cols: number,
    act: number,
    alpha: number,
  ): void;
  binary(
    op: number,
    a: Float32Array,
    b: Float32Array,
    out: Float32Array,
    shape: Int32Array,
    aStrides: Int32Array,
    bStrides: Int32Array,
  ): void;
  unary(op: number, x: Float32Array, out: Float32Array, p1: number, p2: number): void;
  reluGrad(dy: Float32Array, y: Float32Array, dx: Float32Array): void;
  addN(inputs: Float32Array[], out: Float32Array): void;
  reduce(op: number, x: Float32Array, out: Float32Array, outer: number, reduce: number, inner: number): void;
  softmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void;
  /** out[i] = x[ids[i]] (rows of `inner`); throws on an id outside [0, rows). */
  gatherRows(x: Float32Array, ids: Int32Array, out: Float32Array, n: number, inner: number, rows: number): void;
  /** out[s] = the sum of the rows whose id is s; ids outside [0, segments) dropped. */
  segmentSum(
    values: Float32Array,
    ids: Int32Array,
    out: Float32Array,
    n: number,
    inner: number,
    segments: number,
  ): void;
  conv2d(x: Float32Array, filter: Float32Array, out: Float32Array, params: Int32Array, scratch: Float32Array): void;
  conv2dBackpropInput(
    dy: Float32Array,
    filter: Float32Array,
    dx: Float32Array,
    params: Int32Array,
    scratch: Float32Array,
  ): void;
  conv2dBackpropFilter(
    x: Float32Array,
    dy: Float32Array,
    dw: Float32Array,
    params: Int32Array,
    scratch: Float32Array,
  ): void;
  depthwiseConv2d(x: Float32Array, filter: Float32Array, out: Float32Array, params: Int32Array, mult: number): void;
  depthwiseBackpropInput(
    dy: Float32Array,
    filter: Float32Array,
    dx: Float32Array,
    params: Int32Array,
    mult: number,
  ): void;
  depthwiseBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, params: Int32Array, mult: number): void;
  maxPool(x: Float32Array, out: Float32Array, params: Int32Array): void;
  maxPoolGrad(dy: Float32Array, x: Float32Array, dx: Float32Array, params: Int32Array): void;
  avgPool(x: Float32Array, out: Float32Array, params: Int32Array): void;
  avgPoolGrad(dy: Float32Array, dx: Float32Array, params: Int32Array): void;
  sgd(w: Float32Array, g: Float32Array, negLr: number): void;
  momentum(
    w: Float32Array,
    acc: Float32Array,
    g: Float32Array,
    negLr: number,
    momentum: number,
    nesterov: number,
  ): void;
  adam(
    w: Float32Array,
    m: Float32Array,
    v: Float32Array,
    g: Float32Array,
    beta1: number,
    oneMinusBeta1: number,
    beta2: number,
    oneMinusBeta2: number,
    oneMinusAccBeta1: number,
    oneMinusAccBeta2: number,
    epsilon: number,
    negLr: number,
  ): void;
  rmsprop(
    w: Float32Array,
    ms: Float32Array,
    mom: Float32Array,
    mg: Float32Array | null,
    g: Float32Array,
    decay: number,
    oneMinusDecay: number,
    momentum: number,
    lr: number,
    epsilon: number,
    centered: number,
  ): void;
  accumulate(dst: Float32Array, src: Float32Array, dstOffset: number): void;
  accumulateBytes(dst: Float32Array, src: Uint8Array, dstOffset: number): void;
  scale(x: Float32Array, alpha: number): void;
  /** Whether no value is NaN or Infinity. */
  allFinite(x: Float32Array): boolean;
  /** Gives back to the system what malloc keeps free (glibc's malloc_trim); whether anything went back. */
  trimMemory(): boolean;
}

/** Op codes shared with native/src/kernels.h. */
export const BINARY = {
  Add: 0,
  Sub: 1,
  Multiply: 2,
  RealDiv: 3,
  Maximum: 4,
  Minimum: 5,
  SquaredDifference: 6,
  Pow: 7,
} as const;
export const UNARY = {
  Relu: 0,
  Relu6: 1,
  Step: 2,
  Exp: 3,
  Log: 4,
  Neg: 5,
  Sqrt: 6,
  Rsqrt: 7,
  Square: 8,
  Sigmoid: 9,
  Tanh: 10,
  Abs: 11,
  Reciprocal: 12,
  ClipByValue: 13,
  Elu: 14,
  LeakyRelu: 15,
  Softplus: 16,
  Log1p: 17,
  Expm1: 18,
  Sign: 19,
  Linear: 20,
  Erf: 21,
  Floor: 22,
} as const;
export const REDUCE = { Sum: 0, Max: 1, Min: 2, Mean: 3 } as const;
/** Activation codes shared with native/src/step.h. */
export const ACT = {
  linear: 0,
  relu: 1,
  relu6: 2,
  sigmoid: 3,
  tanh: 4,
  hardSigmoid: 5,
  elu: 6,
  selu: 7,
  softplus: 8,
  softsign: 9,
  gelu: 10,
  gelu_new: 11,
  swish: 12,
  mish: 13,
  leakyRelu: 14,
  thresholdedRelu: 15,
} as const;

export type AddonLoad = { ok: true; addon: NativeAddon } | { ok: false; reason: string };
