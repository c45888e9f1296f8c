#include <math.h>
#include "step.h"

/* Activations and their gradients as tfjs-layers computes them (activations.ts and the
 * gradients tfjs-core registers), elementwise. Formulas that TF.js evaluates in double (its cpu
 * kernels are JavaScript) are kept in double; a step's gradient then equals autodiff's to float
 * rounding. */

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

static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

static inline float forward1(int act, float xf, float alpha) {
  double x = xf;
  switch (act) {
    case MT_A_RELU: return xf < 0.0f ? 0.0f : xf;
    case MT_A_RELU6: { float r = xf < 0.0f ? 0.0f : xf; return r > 6.0f ? 6.0f : r; }
    case MT_A_SIGMOID: return (float)sigmoid_d(x);
    case MT_A_TANH: return (float)tanh(x);
    case MT_A_HARD_SIGMOID: {
      float z = 0.2f * xf + 0.5f;
      return z < 0.0f ? 0.0f : (z > 1.0f ? 1.0f : z);
    }
    case MT_A_ELU: return xf >= 0.0f ? xf : (float)(exp(x) - 1.0);
    case MT_A_SELU: return (float)(xf > 0.0f ? SELU_SCALE * x : SELU_SCALE * SELU_ALPHA * (exp(x) - 1.0));
    case MT_A_SOFTPLUS: return (float)softplus_d(x);
    case MT_A_SOFTSIGN: return xf / (fabsf(xf) + 1.0f);
    case MT_A_GELU: return (float)(x * (0.5 * (1.0 + erf(x / sqrt(2.0)))));
    case MT_A_GELU_NEW: {
      double t = tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x));
      return (float)(0.5 * x * (1.0 + t));
    }
    case MT_A_SWISH: return (float)(sigmoid_d((double)(xf * alpha)) * x);
    case MT_A_MISH: return (float)(x * tanh(softplus_d(x)));
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
  for (int64_t i = 0; i < n; i++) y[i] = forward1(act, x[i], alpha);
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
    case MT_A_SELU: return x[i] > 0.0f ? (float)SELU_SCALE : (float)(SELU_SCALE * SELU_ALPHA * exp((double)x[i]));
    case MT_A_SOFTPLUS: return (float)sigmoid_d(x[i]);
    case MT_A_SOFTSIGN: { double d = 1.0 + fabs((double)x[i]); return (float)(1.0 / (d * d)); }
    case MT_A_GELU: {
      double v = x[i];
      return (float)(0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI));
    }
    case MT_A_GELU_NEW: {
      double v = x[i], k = sqrt(2.0 / M_PI);
      double t = tanh(k * (v + 0.044715 * v * v * v));
      return (float)(0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * v * v));
    }
    case MT_A_SWISH: {
      double v = x[i], s = sigmoid_d((double)(x[i] * alpha));
      return (float)(s + v * alpha * s * (1.0 - s));
    }
    case MT_A_MISH: {
      double v = x[i], t = tanh(softplus_d(v));
      return (float)(t + v * (1.0 - t * t) * sigmoid_d(v));
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
  if (add) for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * slope(act, x, y, i, alpha);
  else for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * slope(act, x, y, i, alpha);
}

void mt_softmax_axis(const float *x, float *y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < inner; k++) {
      const float *xs = x + o * n * inner + k;
      float *ys = y + o * n * inner + k;
      float m = n > 0 ? xs[0] : 0.0f;
      for (int64_t j = 1; j < n; j++) if (xs[j * inner] != xs[j * inner] || xs[j * inner] > m) m = xs[j * inner];
      double s = 0.0;
      for (int64_t j = 0; j < n; j++) {
        ys[j * inner] = (float)exp((double)(xs[j * inner] - m));
        s += ys[j * inner];
      }
      float sf = (float)s;
      for (int64_t j = 0; j < n; j++) ys[j * inner] = ys[j * inner] / sf;
    }
  }
}

void mt_softmax_axis_backward(const float *y, const float *dy, float *dx, int64_t outer, int64_t n, int64_t inner, int add) {
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t k = 0; k < inner; k++) {
      int64_t base = o * n * inner + k;
      double s = 0.0;
      for (int64_t j = 0; j < n; j++) s += (double)dy[base + j * inner] * y[base + j * inner];
      float sf = (float)s;
      for (int64_t j = 0; j < n; j++) {
        int64_t at = base + j * inner;
        float v = y[at] * (dy[at] - sf);
        dx[at] = add ? dx[at] + v : v;
      }
    }
  }
}
