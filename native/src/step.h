/* Kernels of the native step for whole graphs (sdk/backends/native/step): activations and their
 * gradients, normalizations, recurrent layers over whole sequences, dropout masks drawn as TF.js
 * draws them, and strided GEMMs. Each works on caller-owned memory and allocates nothing it
 * returns. `add` flags say whether a gradient is added to what its buffer holds (a tensor read
 * by several layers, a weight shared by several calls) or written over it. */
#ifndef MESHTRAIN_STEP_H
#define MESHTRAIN_STEP_H
#include <stdint.h>

/* act.c: activations by code, as tfjs-layers defines them. */
enum {
  MT_A_LINEAR = 0, MT_A_RELU, MT_A_RELU6, MT_A_SIGMOID, MT_A_TANH, MT_A_HARD_SIGMOID, MT_A_ELU, MT_A_SELU,
  MT_A_SOFTPLUS, MT_A_SOFTSIGN, MT_A_GELU, MT_A_GELU_NEW, MT_A_SWISH, MT_A_MISH, MT_A_LEAKY_RELU,
  MT_A_THRESHOLDED_RELU, MT_A_COUNT
};
/* y = act(x); y may be x. */
void mt_act_forward(int act, const float *x, float *y, int64_t n, float alpha);
/* dx (+)= dy * act'(x), from the input x and/or the output y (either may be NULL where the
 * activation does not need it: see mt_act_needs_input); dx may be dy. */
void mt_act_backward(int act, const float *dy, const float *x, const float *y, float *dx, int64_t n, float alpha, int add);
/* Whether act's gradient needs its input (else its output alone gives it). */
int mt_act_needs_input(int act);
/* Softmax over the middle axis of [outer, n, inner], and its gradient dx (+)= y * (dy - sum(dy * y)). */
void mt_softmax_axis(const float *x, float *y, int64_t outer, int64_t n, int64_t inner);
void mt_softmax_axis_backward(const float *y, const float *dy, float *dx, int64_t outer, int64_t n, int64_t inner, int add);

/* norm.c: BatchNormalization over rows x C (channels last) with the batch's statistics; the
 * biased variance, as tf.moments. mean, var, invstd: C each, written. */
void mt_bn_forward(const float *x, float *y, int64_t rows, int C, const float *gamma, const float *beta, float eps,
                   float *mean, float *var, float *invstd);
void mt_bn_backward(const float *dy, const float *x, int64_t rows, int C, const float *mean, const float *invstd,
                    const float *gamma, float *dx, int dxAdd, float *dgamma, float *dbeta, int pAdd);
/* LayerNormalization over each row's `cols` values; mean, invstd: one per row. */
void mt_ln_forward(const float *x, float *y, int64_t rows, int cols, const float *gamma, const float *beta, float eps,
                   float *mean, float *invstd);
void mt_ln_backward(const float *dy, const float *x, int64_t rows, int cols, const float *mean, const float *invstd,
                    const float *gamma, float *dx, int dxAdd, float *dgamma, float *dbeta, int pAdd);

/* rnn.c: recurrent layers over a whole sequence [B, T, ...]. z holds x W + b for every step
 * (input order; G gates of H each); U is [H, G*H]. Step t processes input index s = t, or
 * T-1-t with `reverse` (goBackwards); outputs h, c are in processing order. hp receives, in
 * input order, the previous state each step multiplied its recurrent kernel with (after the
 * recurrent dropout multiplier rmask [B, H], when given): the rows dU is summed over.
 * mask: [B, T] in input order (0 keeps the previous state), or NULL. h0, c0: initial states or
 * NULL (zeros). */
void mt_lstm_forward(float *z, const float *U, float *h, float *c, float *hp, const float *mask, const float *rmask,
                     const float *h0, const float *c0, int B, int T, int H, int reverse, int act, int ract);
/* dh: [B, T, H], dL/dh at each processing step (in: from the outputs; used as workspace). dcT:
 * dL/dc after the last step or NULL. dz: [B, T, 4H] out, dL/d(pre-activations) in input order.
 * dh0, dc0: dL/d(initial states) out, or NULL. work: 3 B H floats. */
void mt_lstm_backward(const float *z, const float *c, const float *h, float *dh, const float *dcT, float *dz,
                      const float *U, const float *mask, const float *rmask, const float *c0, float *dh0, float *dc0,
                      float *work, int B, int T, int H, int reverse, int act, int ract);
/* GRU (reset before the product, as tfjs-layers has it); rh: [B, T, H] out, r * hp per step. */
void mt_gru_forward(float *z, const float *U, float *h, float *hp, float *rh, const float *mask, const float *rmask,
                    const float *h0, int B, int T, int H, int reverse, int act, int ract);
void mt_gru_backward(const float *z, const float *h, const float *hp, float *dh, float *dz, const float *U,
                     const float *mask, const float *rmask, float *dh0, float *work, int B, int T, int H, int reverse,
                     int act, int ract);
void mt_rnn_forward(float *z, const float *U, float *h, float *hp, const float *mask, const float *rmask,
                    const float *h0, int B, int T, int H, int reverse, int act);
void mt_rnn_backward(const float *z, const float *h, float *dh, float *dz, const float *U, const float *mask,
                     const float *rmask, float *dh0, float *work, int B, int T, int H, int reverse, int act);

/* rng.c: TF.js's uniform draws (seedrandom's Alea, its state s0 s1 s2 c) turned into dropout's
 * multiplier floor(u + keep) / keep, in float32 as tf.dropout computes it. */
void mt_dropout_mask(double *state, float *mask, int64_t n, float keep);

/* penalty.c: a weight's L1/L2 penalty, and its gradient x scale added to g (NULL: frozen). */
double mt_penalty(const float *w, float *g, int64_t n, double l1, double l2, double scale);

/* gemm_batched: C[o,i] = alpha op(A[o,i]) op(B[o,i]) + beta C[o,i] for outer x inner matrices,
 * each operand at o * strideOuter + i * strideInner. */
void mt_gemm_batched(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, int64_t aOuter,
                     int64_t aInner, const float *B, int ldb, int64_t bOuter, int64_t bInner, float beta, float *C,
                     int ldc, int64_t cOuter, int64_t cInner, int outer, int inner);
#endif
