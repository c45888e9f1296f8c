#include <math.h>
#include "fastmath.h"
#include "kernels.h"

/* Binary ops with broadcasting. The caller (JavaScript) collapses the shapes so that the last
 * dimension's strides are 0 or 1; the inner loops for those cases vectorize. Results follow
 * TF.js's cpu kernels, which compute in double and store float32: for + - * / and sqrt one
 * double operation rounded once to float is exactly the float operation, so those stay float
 * (and vectorize); longer formulas keep double, as TF.js does. */

#define INNER_LOOPS(EXPR)                                                              \
  if (sa == 1 && sb == 1) {                                                            \
    for (int64_t i = 0; i < n; i++) { float x = a[i], y = b[i]; o[i] = (EXPR); }      \
  } else if (sa == 1 && sb == 0) {                                                     \
    float y = b[0];                                                                    \
    for (int64_t i = 0; i < n; i++) { float x = a[i]; o[i] = (EXPR); }                \
  } else if (sa == 0 && sb == 1) {                                                     \
    float x = a[0];                                                                    \
    for (int64_t i = 0; i < n; i++) { float y = b[i]; o[i] = (EXPR); }                \
  } else {                                                                             \
    for (int64_t i = 0; i < n; i++) { float x = a[i * sa], y = b[i * sb]; o[i] = (EXPR); } \
  }

static inline float max_nan(float x, float y) { return (x != x || y != y) ? NAN : (x > y ? x : y); }
static inline float min_nan(float x, float y) { return (x != x || y != y) ? NAN : (x < y ? x : y); }

static void inner(int op, const float *a, int64_t sa, const float *b, int64_t sb, float *o, int64_t n) {
  switch (op) {
    case MT_ADD: INNER_LOOPS(x + y) break;
    case MT_SUB: INNER_LOOPS(x - y) break;
    case MT_MUL: INNER_LOOPS(x * y) break;
    case MT_DIV: INNER_LOOPS(x / y) break;
    case MT_MAX: INNER_LOOPS(max_nan(x, y)) break;
    case MT_MIN: INNER_LOOPS(min_nan(x, y)) break;
    case MT_SQDIFF: INNER_LOOPS((x - y) * (x - y)) break;
    case MT_POW: INNER_LOOPS((float)pow((double)x, (double)y)) break;
  }
}

void mt_binary(int op, const float *a, const float *b, float *out, int rank, const int32_t *shape,
               const int32_t *as, const int32_t *bs) {
  if (rank == 0) {
    inner(op, a, 0, b, 0, out, 1);
    return;
  }
  int64_t n = shape[rank - 1];
  int64_t outer = 1;
  for (int d = 0; d < rank - 1; d++) outer *= shape[d];
  if (n == 0 || outer == 0) return;
  int32_t idx[MT_MAX_RANK] = {0};
  int64_t ao = 0, bo = 0;
  for (int64_t r = 0; r < outer; r++) {
    inner(op, a + ao, as[rank - 1], b + bo, bs[rank - 1], out + r * n, n);
    /* Advance the outer index like an odometer, keeping a's and b's offsets in step. */
    for (int d = rank - 2; d >= 0; d--) {
      idx[d]++;
      ao += as[d];
      bo += bs[d];
      if (idx[d] < shape[d]) break;
      ao -= (int64_t)as[d] * shape[d];
      bo -= (int64_t)bs[d] * shape[d];
      idx[d] = 0;
    }
  }
}

static inline float softplus(float xf) {
  const double epsilon = 1.1920928955078125e-7;
  const double threshold = log(epsilon) + 2.0;
  double x = xf;
  if (x > -threshold) return xf;
  double e = exp(x);
  if (x < threshold) return (float)e;
  return (float)log(e + 1.0);
}

void mt_unary(int op, const float *x, float *out, int64_t n, float p1, float p2) {
  switch (op) {
    case MT_RELU: for (int64_t i = 0; i < n; i++) out[i] = x[i] < 0.0f ? 0.0f : x[i]; break;
    case MT_RELU6: for (int64_t i = 0; i < n; i++) { float v = x[i] < 0.0f ? 0.0f : x[i]; out[i] = v > 6.0f ? 6.0f : v; } break;
    case MT_STEP: for (int64_t i = 0; i < n; i++) out[i] = x[i] != x[i] ? NAN : (x[i] > 0.0f ? 1.0f : p1); break;
    case MT_EXP: for (int64_t i = 0; i < n; i++) out[i] = (float)exp((double)x[i]); break;
    case MT_LOG: for (int64_t i = 0; i < n; i++) out[i] = (float)log((double)x[i]); break;
    case MT_NEG: for (int64_t i = 0; i < n; i++) out[i] = -x[i]; break;
    case MT_SQRT: for (int64_t i = 0; i < n; i++) out[i] = sqrtf(x[i]); break;
    case MT_RSQRT: for (int64_t i = 0; i < n; i++) out[i] = (float)(1.0 / sqrt((double)x[i])); break;
    case MT_SQUARE: for (int64_t i = 0; i < n; i++) out[i] = x[i] * x[i]; break;
    case MT_SIGMOID: for (int64_t i = 0; i < n; i++) out[i] = (float)(1.0 / (1.0 + exp(-(double)x[i]))); break;
    case MT_TANH: for (int64_t i = 0; i < n; i++) out[i] = (float)tanh((double)x[i]); break;
    case MT_ABS: for (int64_t i = 0; i < n; i++) out[i] = fabsf(x[i]); break;
    case MT_RECIPROCAL: for (int64_t i = 0; i < n; i++) out[i] = 1.0f / x[i]; break;
    case MT_CLIP: for (int64_t i = 0; i < n; i++) out[i] = x[i] > p2 ? p2 : (x[i] < p1 ? p1 : x[i]); break;
    case MT_ELU: for (int64_t i = 0; i < n; i++) out[i] = x[i] >= 0.0f ? x[i] : (float)(exp((double)x[i]) - 1.0); break;
    case MT_LEAKY_RELU: for (int64_t i = 0; i < n; i++) out[i] = x[i] < 0.0f ? p1 * x[i] : x[i]; break;
    case MT_SOFTPLUS: for (int64_t i = 0; i < n; i++) out[i] = softplus(x[i]); break;
    case MT_LOG1P: for (int64_t i = 0; i < n; i++) out[i] = (float)log1p((double)x[i]); break;
    case MT_EXPM1: for (int64_t i = 0; i < n; i++) out[i] = (float)expm1((double)x[i]); break;
    case MT_SIGN: for (int64_t i = 0; i < n; i++) out[i] = x[i] < 0.0f ? -1.0f : (x[i] > 0.0f ? 1.0f : 0.0f); break;
    case MT_LINEAR: for (int64_t i = 0; i < n; i++) out[i] = x[i]; break;
    case MT_ERF: for (int64_t i = 0; i < n; i++) out[i] = mt_erf(x[i]); break;
    case MT_FLOOR: for (int64_t i = 0; i < n; i++) out[i] = floorf(x[i]); break;
  }
}

/* The gradient of ReLU in one pass: dy where y > 0, else 0. */
void mt_relu_grad(const float *dy, const float *y, float *dx, int64_t n) {
  for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void mt_add_n(const float **inputs, int count, float *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = inputs[0][i];
  for (int k = 1; k < count; k++) {
    const float *in = inputs[k];
    for (int64_t i = 0; i < n; i++) out[i] += in[i];
  }
}

/* The epilogue of fused matmul and conv: add a bias per column, then an activation, in place. */
void mt_bias_activation(float *out, const float *bias, int64_t rows, int cols, int act, float alpha) {
  if (bias) {
    for (int64_t r = 0; r < rows; r++) {
      float *row = out + r * cols;
      for (int c = 0; c < cols; c++) row[c] += bias[c];
    }
  }
  if (act != MT_LINEAR) mt_unary(act, out, out, rows * (int64_t)cols, alpha, 0.0f);
}
