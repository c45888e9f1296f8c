/* meshtrain native kernels: float32 CPU kernels over OpenBLAS for TF.js's cpu backend.
 * Every function works on caller-owned memory (typed arrays from JavaScript); none allocates
 * what it returns. Layouts follow TF.js: row-major, NHWC images, HWIO filters. */
#ifndef MESHTRAIN_KERNELS_H
#define MESHTRAIN_KERNELS_H
#include <stdint.h>

/* gemm.c */
void mt_set_threads(int budget);
int mt_get_threads(void);
/* Two threads on two cores lose to one unless the GEMM is large: use the budget only above this. */
#define MT_PARALLEL_FLOPS 50e6
void mt_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);
void mt_batch_matmul(const float *a, const float *b, float *out, int batch, int aBatchStride, int bBatchStride,
                     int M, int N, int K, int transA, int transB);

/* elementwise.c */
enum { MT_ADD = 0, MT_SUB, MT_MUL, MT_DIV, MT_MAX, MT_MIN, MT_SQDIFF, MT_POW };
enum {
  MT_RELU = 0, MT_RELU6, MT_STEP, MT_EXP, MT_LOG, MT_NEG, MT_SQRT, MT_RSQRT, MT_SQUARE, MT_SIGMOID,
  MT_TANH, MT_ABS, MT_RECIPROCAL, MT_CLIP, MT_ELU, MT_LEAKY_RELU, MT_SOFTPLUS, MT_LOG1P, MT_EXPM1, MT_SIGN,
  MT_LINEAR, MT_ERF, MT_FLOOR
};
#define MT_MAX_RANK 6
void mt_binary(int op, const float *a, const float *b, float *out, int rank, const int32_t *shape,
               const int32_t *aStrides, const int32_t *bStrides);
void mt_unary(int op, const float *x, float *out, int64_t n, float p1, float p2);
void mt_relu_grad(const float *dy, const float *y, float *dx, int64_t n);
void mt_add_n(const float **inputs, int count, float *out, int64_t n);
/* shape.c: out = x with its axes permuted (out axis d is x axis perm[d]); out = x tiled reps times along each axis. */
void mt_transpose(const float *x, float *out, int rank, const int32_t *shape, const int32_t *perm);
void mt_tile(const float *x, float *out, int rank, const int32_t *shape, const int32_t *reps);
void mt_bias_activation(float *out, const float *bias, int64_t rows, int cols, int act, float alpha);

/* reduce.c */
enum { MT_RSUM = 0, MT_RMAX, MT_RMIN, MT_RMEAN };
void mt_reduce(int op, const float *x, float *out, int64_t outer, int64_t reduce, int64_t inner);
void mt_softmax(const float *logits, float *out, int64_t rows, int cols);
void mt_gather_rows(const float *x, const int32_t *ids, float *out, int64_t n, int64_t inner);
void mt_segment_sum(const float *values, const int32_t *ids, float *out, int64_t n, int64_t inner, int64_t segments);

/* conv.c: params = {batch, inH, inW, inC, outH, outW, outC, kH, kW, strideH, strideW, dilH, dilW, padTop, padLeft} */
enum { P_BATCH = 0, P_INH, P_INW, P_INC, P_OUTH, P_OUTW, P_OUTC, P_KH, P_KW, P_SH, P_SW, P_DH, P_DW, P_PT, P_PL, P_COUNT };
void mt_conv2d(const float *x, const float *filter, float *out, const int32_t *p, float *scratch, int64_t scratchLen);
void mt_conv2d_backprop_input(const float *dy, const float *filter, float *dx, const int32_t *p, float *scratch, int64_t scratchLen);
void mt_conv2d_backprop_filter(const float *x, const float *dy, float *dw, const int32_t *p, float *scratch, int64_t scratchLen);
/* conv_direct.c: the same convolutions without im2col, where they are faster (see mt_conv_direct) */
enum { MT_PASS_FORWARD = 0, MT_PASS_INPUT, MT_PASS_FILTER };
int mt_conv_direct(const int32_t *p, int pass);
void mt_conv2d_direct(const float *x, const float *filter, float *out, const int32_t *p);
void mt_conv2d_direct_filter(const float *x, const float *dy, float *dw, const int32_t *p);
void mt_conv2d_direct_input(const float *dy, const float *filter, float *dx, const int32_t *p, float *wt);
void mt_depthwise_conv2d(const float *x, const float *filter, float *out, const int32_t *p, int mult);
void mt_depthwise_backprop_input(const float *dy, const float *filter, float *dx, const int32_t *p, int mult);
void mt_depthwise_backprop_filter(const float *x, const float *dy, float *dw, const int32_t *p, int mult);

/* pool.c: same params; outC == inC */
void mt_max_pool(const float *x, float *out, const int32_t *p);
void mt_max_pool_grad(const float *dy, const float *x, float *dx, const int32_t *p);
void mt_avg_pool(const float *x, float *out, const int32_t *p);
void mt_avg_pool_grad(const float *dy, float *dx, const int32_t *p);

/* optim.c: in place on the variable's values */
void mt_sgd(float *w, const float *g, int64_t n, float negLr);
void mt_momentum(float *w, float *acc, const float *g, int64_t n, float negLr, float momentum, int nesterov);
void mt_adam(float *w, float *m, float *v, const float *g, int64_t n, float beta1, float oneMinusBeta1, float beta2,
             float oneMinusBeta2, float oneMinusAccBeta1, float oneMinusAccBeta2, float epsilon, float negLr);
void mt_rmsprop(float *w, float *ms, float *mom, float *mg, const float *g, int64_t n, float decay, float oneMinusDecay,
                float momentum, float lr, float epsilon, int centered);
#endif
