#include <math.h>
#include "kernels.h"

/* Optimizer updates in place, in the order of TF.js's own ops (each op rounds to float32, and a
 * double op rounded once equals the float op for + - * / sqrt), so a run with these matches a run
 * with tf.train's optimizers. The library is built with
 * -ffp-contract=off so no multiply-add is fused into one rounding. */

void mt_sgd(float *w, const float *g, int64_t n, float negLr) {
  for (int64_t i = 0; i < n; i++) w[i] = negLr * g[i] + w[i];
}

void mt_momentum(float *w, float *acc, const float *g, int64_t n, float negLr, float momentum, int nesterov) {
  for (int64_t i = 0; i < n; i++) {
    float a = acc[i] * momentum + g[i];
    acc[i] = a;
    w[i] = nesterov ? negLr * (g[i] + a * momentum) + w[i] : negLr * a + w[i];
  }
}

void mt_adam(float *w, float *m, float *v, const float *g, int64_t n, float beta1, float oneMinusBeta1, float beta2,
             float oneMinusBeta2, float oneMinusAccBeta1, float oneMinusAccBeta2, float epsilon, float negLr) {
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i];
    float mi = m[i] * beta1 + gi * oneMinusBeta1;
    float vi = v[i] * beta2 + (gi * gi) * oneMinusBeta2;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / oneMinusAccBeta1;
    float vhat = vi / oneMinusAccBeta2;
    float step = mhat / (sqrtf(vhat) + epsilon);
    w[i] = step * negLr + w[i];
  }
}

void mt_rmsprop(float *w, float *ms, float *mom, float *mg, const float *g, int64_t n, float decay, float oneMinusDecay,
                float momentum, float lr, float epsilon, int centered) {
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i];
    float s = ms[i] * decay + (gi * gi) * oneMinusDecay;
    ms[i] = s;
    float denom;
    if (centered) {
      float mgi = mg[i] * decay + gi * oneMinusDecay;
      mg[i] = mgi;
      denom = sqrtf(s - (mgi * mgi + epsilon));
    } else {
      denom = sqrtf(s + epsilon);
    }
    float mo = mom[i] * momentum + (gi * lr) / denom;
    mom[i] = mo;
    w[i] = w[i] - mo;
  }
}
