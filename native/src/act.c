#include <math.h>
#include "fastmath.h"
#include "step.h"

/* Activations and their gradients as tfjs-layers computes them (activations.ts and the
 * gradients tfjs-core registers), elementwise. exp, tanh, sigmoid and erf are fastmath.h's float
 * versions, which vectorize (a step's gradient equals autodiff's within a few float32 roundings);
 * softplus keeps TF.js's own formula in double. */

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

static inline double softplus_d(double x) {
  /* TF.js's cpu Softplus: linear above -log(eps) - 2, exp below log(eps) + 2. */
  const double epsilon = 1.1920928955078125e-7;
  const double threshold = log(epsilon) + 2.0;
  if (x > -threshold) return x;
  double e = exp(x);
  if (x < threshold) return e;
  return log(e + 1.0);
}


static inline float forward1(int act, float xf, float alpha) {
  switch (act) {
    case MT_A_RELU: return xf < 0.0f ? 0.0f : xf;
    case MT_A_RELU6: { float r = xf < 0.0f ? 0.0f : xf; return r > 6.0f ? 6.0f : r; }
    case MT_A_SIGMOID: return mt_sigmoid(xf);
    case MT_A_TANH: return mt_tanh(xf);
    case MT_A_HARD_SIGMOID: {
      float z = 0.2f * xf + 0.5f;
      return z < 0.0f ? 0.0f : (z > 1.0f ? 1.0f : z);
    }
    case MT_A_ELU: return xf >= 0.0f ? xf : mt_exp(xf) - 1.0f;
    case MT_A_SELU: return xf > 0.0f ? (float)SELU_SCALE * xf : (float)(SELU_SCALE * SELU_ALPHA) * (mt_exp(xf) - 1.0f);
    case MT_A_SOFTPLUS: return (float)softplus_d(xf);
    case MT_A_SOFTSIGN: return xf / (fabsf(xf) + 1.0f);
    case MT_A_GELU: return xf * (0.5f * (1.0f + mt_erf(xf * 0.70710678118654752f)));
    case MT_A_GELU_NEW: return 0.5f * xf * (1.0f + mt_tanh(0.79788456080286536f * (xf + 0.044715f * xf * xf * xf)));
    case MT_A_SWISH: return mt_sigmoid(xf * alpha) * xf;
    case MT_A_MISH: return xf * mt_tanh((float)softplus_d(xf));
    case MT_A_LEAKY_RELU: return xf < 0.0f ? alpha * xf : xf;
    case MT_A_THRESHOLDED_RELU: return xf > alpha ? xf : 0.0f;
    default: return xf;
  }
}

int mt_act_needs_input(int act) {
  switch (act) {
    case MT_A_LINEAR: case MT_A_RELU: case MT_A_RELU6: case MT_A_SIGMOID: case MT_A_TANH: case MT_A_ELU:
      return 0;
    default:
      return 1;
  }
}

void mt_act_forward(int act, const float *x, float *y, int64_t n, float alpha) {
  if (act == MT_A_LINEAR) {
    if (y != x) for (int64_t i = 0; i < n; i++) y[i] = x[i];
    return;
  }
  if (act == MT_A_RELU) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    return;
  }
  /* One loop per activation, so each vectorizes (the switch hoisted out of it). */
#define FWD(A) case A: for (int64_t i = 0; i < n; i++) y[i] = forward1(A, x[i], alpha); break;
  switch (act) {
    FWD(MT_A_RELU6) FWD(MT_A_SIGMOID) FWD(MT_A_TANH) FWD(MT_A_HARD_SIGMOID) FWD(MT_A_ELU) FWD(MT_A_SELU)
    FWD(MT_A_SOFTPLUS) FWD(MT_A_SOFTSIGN) FWD(MT_A_GELU) FWD(MT_A_GELU_NEW) FWD(MT_A_SWISH) FWD(MT_A_MISH)
    FWD(MT_A_LEAKY_RELU) FWD(MT_A_THRESHOLDED_RELU)
    default: break;
  }
#undef FWD
}

/* act'(input) as a factor of dy, from the input x and/or the output y. */
static inline float slope(int act, const float *x, const float *y, int64_t i, float alpha) {
  switch (act) {
    case MT_A_RELU: return y[i] > 0.0f ? 1.0f : 0.0f;
    case MT_A_RELU6: return y[i] > 0.0f && y[i] < 6.0f ? 1.0f : 0.0f;
    case MT_A_SIGMOID: return y[i] * (1.0f - y[i]);
    case MT_A_TANH: return 1.0f - y[i] * y[i];
    case MT_A_ELU: return y[i] >= 0.0f ? 1.0f : y[i] + 1.0f;
    case MT_A_HARD_SIGMOID: {
      float z = 0.2f * x[i] + 0.5f;
      return z >= 0.0f && z <= 1.0f ? 0.2f : 0.0f;
    }
    case MT_A_SELU: return x[i] > 0.0f ? (float)SELU_SCALE : (float)(SELU_SCALE * SELU_ALPHA) * mt_exp(x[i]);
    case MT_A_SOFTPLUS: return mt_sigmoid(x[i]);
    case MT_A_SOFTSIGN: { float d = 1.0f + fabsf(x[i]); return 1.0f / (d * d); }
    case MT_A_GELU: {
      float v = x[i];
      return 0.5f * (1.0f + mt_erf(v * 0.70710678118654752f)) + v * mt_exp(-0.5f * v * v) * 0.39894228040143268f;
    }
    case MT_A_GELU_NEW: {
      float v = x[i], k = 0.79788456080286536f;
      float t = mt_tanh(k * (v + 0.044715f * v * v * v));
      return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * v * v);
    }
    case MT_A_SWISH: {
      float v = x[i], s = mt_sigmoid(v * alpha);
      return s + v * alpha * s * (1.0f - s);
    }
    case MT_A_MISH: {
      float v = x[i], t = mt_tanh((float)softplus_d(v));
      return t + v * (1.0f - t * t) * mt_sigmoid(v);
    }
    case MT_A_LEAKY_RELU: return x[i] > 0.0f ? 1.0f : alpha;
    case MT_A_THRESHOLDED_RELU: return x[i] > alpha ? 1.0f : 0.0f;
    default: return 1.0f;
  }
}

void mt_act_backward(int act, const float *dy, const float *x, const float *y, float *dx, int64_t n, float alpha, int add) {
  if (act == MT_A_LINEAR) {
    if (add) for (int64_t i = 0; i < n; i++) dx[i] += dy[i];
    else if (dx != dy) for (int64_t i = 0; i < n; i++) dx[i] = dy[i];
    return;
  }
  if (act == MT_A_RELU && !add) {
    for (int64_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    return;
  }
#define BWD(A) case A: \
    if (add) for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * slope(A, x, y, i, alpha); \
    else for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * slope(A, x, y, i, alpha); \
    break;
  switch (act) {
    BWD(MT_A_RELU) BWD(MT_A_RELU6) BWD(MT_A_SIGMOID) BWD(MT_A_TANH) BWD(MT_A_HARD_SIGMOID) BWD(MT_A_ELU) BWD(MT_A_SELU)
    BWD(MT_A_SOFTPLUS) BWD(MT_A_SOFTSIGN) BWD(MT_A_GELU) BWD(MT_A_GELU_NEW) BWD(MT_A_SWISH) BWD(MT_A_MISH)
    BWD(MT_A_LEAKY_RELU) BWD(MT_A_THRESHOLDED_RELU)
    default: break;
  }
#undef BWD
}

/* A row's max and sum of exp(x - max) in 16 lanes each, so the loops vectorize without
 * reassociating anything the compiler may not. */
#define LANES 16
static void softmax_row(const float *x, float *y, int64_t n) {
  float m16[LANES];
  for (int l = 0; l < LANES; l++) m16[l] = -INFINITY;
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) m16[l] = x[i + l] > m16[l] ? x[i + l] : m16[l];
  float m = -INFINITY;
  for (int l = 0; l < LANES; l++) m = m16[l] > m ? m16[l] : m;
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  float s16[LANES] = {0};
  for (i = 0; i + LANES <= n; i += LANES)
    for (int l = 0; l < LANES; l++) {
      float e = mt_exp(x[i + l] - m);
      y[i + l] = e;
      s16[l] += e;
    }
  float s = 0.0f;
  for (; i < n; i++) {
    y[i] = mt_exp(x[i] - m);
    s += y[i];
  }
  for (int l = 0; l < LANES; l++) s += s16[l];
  float inv = 1.0f / s;
  for (i = 0; i < n; i++) y[i] *= inv;
}

void mt_softmax_axis(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    for (int64_t o = 0; o < outer; o++) softmax_row(x + o * n, y + o * n, n);
    return;
  }
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < inner; k++) {
      const float *xs = x + o * n * inner + k;
      float *ys = y + o * n * inner + k;
      float m = n > 0 ? xs[0] : 0.0f;
      for (int64_t j = 1; j < n; j++) if (xs[j * inner] != xs[j * inner] || xs[j * inner] > m) m = xs[j * inner];
      float s = 0.0f;
      for (int64_t j = 0; j < n; j++) {
        ys[j * inner] = mt_exp(xs[j * inner] - m);
        s += ys[j * inner];
      }
      for (int64_t j = 0; j < n; j++) ys[j * inner] = ys[j * inner] / s;
    }
  }
}

void mt_softmax_axis_backward(const float *y, const float *dy, float *dx, int64_t outer, int64_t n, int64_t inner, int add) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < inner; k++) {
      int64_t base = o * n * inner + k;
      float s16[LANES] = {0};
      float s = 0.0f;
      int64_t j = 0;
      if (inner == 1) {
        for (; j + LANES <= n; j += LANES)
          for (int l = 0; l < LANES; l++) s16[l] += dy[base + j + l] * y[base + j + l];
        for (int l = 0; l < LANES; l++) s += s16[l];
      }
      for (; j < n; j++) s += dy[base + j * inner] * y[base + j * inner];
      for (j = 0; j < n; j++) {
        int64_t at = base + j * inner;
        float v = y[at] * (dy[at] - s);
        dx[at] = add ? dx[at] + v : v;
      }
    }
  }
}
