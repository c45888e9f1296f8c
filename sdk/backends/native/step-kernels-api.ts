/**
 * The graph step's kernels (native/src/step.h), as the addon exports them; `add` (1) adds a
 * gradient to what its buffer holds.
 */
export interface StepKernels {
  sgemm(
    transA: number,
    transB: number,
    M: number,
    N: number,
    K: number,
    alpha: number,
    A: Float32Array,
    lda: number,
    B: Float32Array,
    ldb: number,
    beta: number,
    C: Float32Array,
    ldc: number,
  ): void;
  /** dims: [transA, transB, M, N, K, lda, ldb, ldc, outer, inner]; strides: [aOuter, aInner, bOuter, bInner, cOuter, cInner]. */
  gemmBatched(
    A: Float32Array,
    B: Float32Array,
    C: Float32Array,
    dims: Int32Array,
    strides: Float64Array,
    alpha: number,
    beta: number,
  ): void;
  actForward(act: number, x: Float32Array, y: Float32Array, alpha: number): void;
  actBackward(
    act: number,
    dy: Float32Array,
    x: Float32Array | null,
    y: Float32Array | null,
    dx: Float32Array,
    alpha: number,
    add: number,
  ): void;
  softmaxAxis(x: Float32Array, y: Float32Array, outer: number, n: number, inner: number): void;
  softmaxAxisBackward(
    y: Float32Array,
    dy: Float32Array,
    dx: Float32Array,
    outer: number,
    n: number,
    inner: number,
    add: number,
  ): void;
  bnForward(
    x: Float32Array,
    y: Float32Array,
    rows: number,
    channels: number,
    gamma: Float32Array | null,
    beta: Float32Array | null,
    eps: number,
    mean: Float32Array,
    variance: Float32Array,
    invstd: Float32Array,
  ): void;
  bnBackward(
    dy: Float32Array,
    x: Float32Array,
    rows: number,
    channels: number,
    mean: Float32Array,
    invstd: Float32Array,
    gamma: Float32Array | null,
    dx: Float32Array | null,
    dxAdd: number,
    dgamma: Float32Array | null,
    dbeta: Float32Array | null,
    paramAdd: number,
  ): void;
  lnForward(
    x: Float32Array,
    y: Float32Array,
    rows: number,
    cols: number,
    gamma: Float32Array | null,
    beta: Float32Array | null,
    eps: number,
    mean: Float32Array,
    invstd: Float32Array,
  ): void;
  lnBackward(
    dy: Float32Array,
    x: Float32Array,
    rows: number,
    cols: number,
    mean: Float32Array,
    invstd: Float32Array,
    gamma: Float32Array | null,
    dx: Float32Array | null,
    dxAdd: number,
    dgamma: Float32Array | null,
    dbeta: Float32Array | null,
    paramAdd: number,
  ): void;
  /** dims: [B, T, H, reverse, act, recurrentAct]. */
  lstmForward(
    z: Float32Array,
    U: Float32Array,
    h: Float32Array,
    c: Float32Array,
    hp: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    h0: Float32Array | null,
    c0: Float32Array | null,
    dims: Int32Array,
  ): void;
  lstmBackward(
    z: Float32Array,
    c: Float32Array,
    h: Float32Array,
    dh: Float32Array,
    dcT: Float32Array | null,
    dz: Float32Array,
    U: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    c0: Float32Array | null,
    dh0: Float32Array | null,
    dc0: Float32Array | null,
    work: Float32Array,
    dims: Int32Array,
  ): void;
  gruForward(
    z: Float32Array,
    U: Float32Array,
    h: Float32Array,
    hp: Float32Array,
    rh: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    h0: Float32Array | null,
    dims: Int32Array,
  ): void;
  gruBackward(
    z: Float32Array,
    h: Float32Array,
    hp: Float32Array,
    dh: Float32Array,
    dz: Float32Array,
    U: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    dh0: Float32Array | null,
    work: Float32Array,
    dims: Int32Array,
  ): void;
  rnnForward(
    z: Float32Array,
    U: Float32Array,
    h: Float32Array,
    hp: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    h0: Float32Array | null,
    dims: Int32Array,
  ): void;
  rnnBackward(
    z: Float32Array,
    h: Float32Array,
    dh: Float32Array,
    dz: Float32Array,
    U: Float32Array,
    mask: Float32Array | null,
    rmask: Float32Array | null,
    dh0: Float32Array | null,
    work: Float32Array,
    dims: Int32Array,
  ): void;
  /** state: Alea's [s0, s1, s2, c], advanced; mask[i] = floor(u_i + keep) / keep. */
  dropoutMask(state: Float64Array, mask: Float32Array, keep: number): void;
  /** A weight's penalty l1 sum|w| + l2 sum w^2; g (its gradient, null when frozen) += (l1 sign(w) + 2 l2 w) x scale. */
  penalty(w: Float32Array, g: Float32Array | null, l1: number, l2: number, scale: number): number;
  scatterAddRows(grad: Float32Array, ids: Int32Array, dy: Float32Array, n: number, inner: number, rows: number): void;
  /** out = x with axes permuted (out axis d is x axis perm[d]), rank 1-6. */
  transpose(x: Float32Array, out: Float32Array, shape: Int32Array, perm: Int32Array): void;
  /** out = x tiled reps[d] times along each axis d, rank 1-6. */
  tile(x: Float32Array, out: Float32Array, shape: Int32Array, reps: Int32Array): void;
}
