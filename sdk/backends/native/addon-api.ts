/** The C functions of native/src, as the addon exports them. Arrays are read and written in place. */
export interface NativeAddon {
  setThreads(budget: number): void;
  getThreads(): number;
  batchMatMul(a: Float32Array, b: Float32Array, out: Float32Array, batch: number, aBatchStride: number, bBatchStride: number, M: number, N: number, K: number, transA: number, transB: number): void;
  biasActivation(out: Float32Array, bias: Float32Array | null, rows: number, cols: number, act: number, alpha: number): void;
  binary(op: number, a: Float32Array, b: Float32Array, out: Float32Array, shape: Int32Array, aStrides: Int32Array, bStrides: Int32Array): void;
  unary(op: number, x: Float32Array, out: Float32Array, p1: number, p2: number): void;
  reluGrad(dy: Float32Array, y: Float32Array, dx: Float32Array): void;
  addN(inputs: Float32Array[], out: Float32Array): void;
  reduce(op: number, x: Float32Array, out: Float32Array, outer: number, reduce: number, inner: number): void;
  softmax(x: Float32Array, out: Float32Array, rows: number, cols: number): void;
  /** out[i] = x[ids[i]] (rows of `inner`); throws on an id outside [0, rows). */
  gatherRows(x: Float32Array, ids: Int32Array, out: Float32Array, n: number, inner: number, rows: number): void;
  /** out[s] = the sum of the rows whose id is s; ids outside [0, segments) dropped. */
  segmentSum(values: Float32Array, ids: Int32Array, out: Float32Array, n: number, inner: number, segments: number): void;
  conv2d(x: Float32Array, filter: Float32Array, out: Float32Array, params: Int32Array, scratch: Float32Array): void;
  conv2dBackpropInput(dy: Float32Array, filter: Float32Array, dx: Float32Array, params: Int32Array, scratch: Float32Array): void;
  conv2dBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, params: Int32Array, scratch: Float32Array): void;
  depthwiseConv2d(x: Float32Array, filter: Float32Array, out: Float32Array, params: Int32Array, mult: number): void;
  depthwiseBackpropInput(dy: Float32Array, filter: Float32Array, dx: Float32Array, params: Int32Array, mult: number): void;
  depthwiseBackpropFilter(x: Float32Array, dy: Float32Array, dw: Float32Array, params: Int32Array, mult: number): void;
  maxPool(x: Float32Array, out: Float32Array, params: Int32Array): void;
  maxPoolGrad(dy: Float32Array, x: Float32Array, dx: Float32Array, params: Int32Array): void;
  avgPool(x: Float32Array, out: Float32Array, params: Int32Array): void;
  avgPoolGrad(dy: Float32Array, dx: Float32Array, params: Int32Array): void;
  sgd(w: Float32Array, g: Float32Array, negLr: number): void;
  momentum(w: Float32Array, acc: Float32Array, g: Float32Array, negLr: number, momentum: number, nesterov: number): void;
  adam(w: Float32Array, m: Float32Array, v: Float32Array, g: Float32Array, beta1: number, oneMinusBeta1: number, beta2: number, oneMinusBeta2: number, oneMinusAccBeta1: number, oneMinusAccBeta2: number, epsilon: number, negLr: number): void;
  rmsprop(w: Float32Array, ms: Float32Array, mom: Float32Array, mg: Float32Array | null, g: Float32Array, decay: number, oneMinusDecay: number, momentum: number, lr: number, epsilon: number, centered: number): void;
  accumulate(dst: Float32Array, src: Float32Array, dstOffset: number): void;
  accumulateBytes(dst: Float32Array, src: Uint8Array, dstOffset: number): void;
  scale(x: Float32Array, alpha: number): void;
  /** Whether no value is NaN or Infinity. */
  allFinite(x: Float32Array): boolean;
  /** Gives back to the system what malloc keeps free (glibc's malloc_trim); whether anything went back. */
  trimMemory(): boolean;
  /** The graph step's kernels (native/src/step.h); `add` (1) adds a gradient to what its buffer holds. */
  sgemm(transA: number, transB: number, M: number, N: number, K: number, alpha: number, A: Float32Array, lda: number, B: Float32Array, ldb: number, beta: number, C: Float32Array, ldc: number): void;
  /** dims: [transA, transB, M, N, K, lda, ldb, ldc, outer, inner]; strides: [aOuter, aInner, bOuter, bInner, cOuter, cInner]. */
  gemmBatched(A: Float32Array, B: Float32Array, C: Float32Array, dims: Int32Array, strides: Float64Array, alpha: number, beta: number): void;
  actForward(act: number, x: Float32Array, y: Float32Array, alpha: number): void;
  actBackward(act: number, dy: Float32Array, x: Float32Array | null, y: Float32Array | null, dx: Float32Array, alpha: number, add: number): void;
  softmaxAxis(x: Float32Array, y: Float32Array, outer: number, n: number, inner: number): void;
  softmaxAxisBackward(y: Float32Array, dy: Float32Array, dx: Float32Array, outer: number, n: number, inner: number, add: number): void;
  bnForward(x: Float32Array, y: Float32Array, rows: number, channels: number, gamma: Float32Array | null, beta: Float32Array | null, eps: number, mean: Float32Array, variance: Float32Array, invstd: Float32Array): void;
  bnBackward(dy: Float32Array, x: Float32Array, rows: number, channels: number, mean: Float32Array, invstd: Float32Array, gamma: Float32Array | null, dx: Float32Array | null, dxAdd: number, dgamma: Float32Array | null, dbeta: Float32Array | null, paramAdd: number): void;
  lnForward(x: Float32Array, y: Float32Array, rows: number, cols: number, gamma: Float32Array | null, beta: Float32Array | null, eps: number, mean: Float32Array, invstd: Float32Array): void;
  lnBackward(dy: Float32Array, x: Float32Array, rows: number, cols: number, mean: Float32Array, invstd: Float32Array, gamma: Float32Array | null, dx: Float32Array | null, dxAdd: number, dgamma: Float32Array | null, dbeta: Float32Array | null, paramAdd: number): void;
  /** dims: [B, T, H, reverse, act, recurrentAct]. */
  lstmForward(z: Float32Array, U: Float32Array, h: Float32Array, c: Float32Array, hp: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, h0: Float32Array | null, c0: Float32Array | null, dims: Int32Array): void;
  lstmBackward(z: Float32Array, c: Float32Array, h: Float32Array, dh: Float32Array, dcT: Float32Array | null, dz: Float32Array, U: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, c0: Float32Array | null, dh0: Float32Array | null, dc0: Float32Array | null, work: Float32Array, dims: Int32Array): void;
  gruForward(z: Float32Array, U: Float32Array, h: Float32Array, hp: Float32Array, rh: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, h0: Float32Array | null, dims: Int32Array): void;
  gruBackward(z: Float32Array, h: Float32Array, hp: Float32Array, dh: Float32Array, dz: Float32Array, U: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, dh0: Float32Array | null, work: Float32Array, dims: Int32Array): void;
  rnnForward(z: Float32Array, U: Float32Array, h: Float32Array, hp: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, h0: Float32Array | null, dims: Int32Array): void;
  rnnBackward(z: Float32Array, h: Float32Array, dh: Float32Array, dz: Float32Array, U: Float32Array, mask: Float32Array | null, rmask: Float32Array | null, dh0: Float32Array | null, work: Float32Array, dims: Int32Array): void;
  /** state: Alea's [s0, s1, s2, c], advanced; mask[i] = floor(u_i + keep) / keep. */
  dropoutMask(state: Float64Array, mask: Float32Array, keep: number): void;
  /** A weight's penalty l1 sum|w| + l2 sum w^2; g (its gradient, null when frozen) += (l1 sign(w) + 2 l2 w) x scale. */
  penalty(w: Float32Array, g: Float32Array | null, l1: number, l2: number, scale: number): number;
  scatterAddRows(grad: Float32Array, ids: Int32Array, dy: Float32Array, n: number, inner: number, rows: number): void;
  /** out = x with axes permuted (out axis d is x axis perm[d]), rank 1-6. */
  transpose(x: Float32Array, out: Float32Array, shape: Int32Array, perm: Int32Array): void;
  /** out = x tiled reps[d] times along each axis d, rank 1-6. */
  tile(x: Float32Array, out: Float32Array, shape: Int32Array, reps: Int32Array): void;
  /** The native data plane (native/src/dp_*.c); see sdk/collectives/data-plane.ts. */
  dataPlaneProblem(): string | null;
  dataListen(host: string): { fd: number; port: number };
  dataAccept(listenFd: number, token: string, expectRank: number, timeoutMs: number, who: string): Promise<number>;
  dataDial(host: string, port: number, token: string, myRank: number, timeoutMs: number, who: string): Promise<number>;
  /** format: 0 none, 1 fp16, 2 bf16, for data[0..packed). */
  dataAllReduce(prevFd: number, nextFd: number, data: Float32Array, position: number, size: number, chunkElements: number, seq: number, timeoutMs: number, prevName: string, nextName: string, format: number, packed: number, phases: number): Promise<{ waitMs: number; commMs: number; bytesSent: number }>;
  dataShutdown(fd: number): void;
  dataClose(fd: number): void;
  /** The 16-bit codec (native/src/half.c); see sdk/collectives/half-codec.ts. */
  halfEncode(format: number, src: Float32Array, dst: Uint8Array): void;
  halfDecode(format: number, src: Uint8Array, dst: Float32Array, dstOffset: number, mode: number): void;
  halfRound(format: number, x: Float32Array): void;
  halfFeedback(format: number, g: Float32Array, r: Float32Array): void;
}

/** Op codes shared with native/src/kernels.h. */
export const BINARY = { Add: 0, Sub: 1, Multiply: 2, RealDiv: 3, Maximum: 4, Minimum: 5, SquaredDifference: 6, Pow: 7 } as const;
export const UNARY = {
  Relu: 0, Relu6: 1, Step: 2, Exp: 3, Log: 4, Neg: 5, Sqrt: 6, Rsqrt: 7, Square: 8, Sigmoid: 9, Tanh: 10, Abs: 11,
  Reciprocal: 12, ClipByValue: 13, Elu: 14, LeakyRelu: 15, Softplus: 16, Log1p: 17, Expm1: 18, Sign: 19, Linear: 20,
  Erf: 21, Floor: 22,
} as const;
export const REDUCE = { Sum: 0, Max: 1, Min: 2, Mean: 3 } as const;
/** Activation codes shared with native/src/step.h. */
export const ACT = {
  linear: 0, relu: 1, relu6: 2, sigmoid: 3, tanh: 4, hardSigmoid: 5, elu: 6, selu: 7, softplus: 8, softsign: 9,
  gelu: 10, gelu_new: 11, swish: 12, mish: 13, leakyRelu: 14, thresholdedRelu: 15,
} as const;

export type AddonLoad = { ok: true; addon: NativeAddon } | { ok: false; reason: string };
