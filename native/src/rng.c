#include <math.h>
#include <stdint.h>
#include "step.h"

/* tf.dropout draws its noise with tf.randomUniform, whose generator is seedrandom's Alea (seeded
 * by Math.random() unless the layer has a seed). The same arithmetic in double gives the same
 * numbers to the bit; each is stored as float32, as TF.js's Float32Array stores it, before
 * floor(u + keep) / keep is taken in float32. sdk/backends/native/step/alea.ts seeds the state. */
void mt_dropout_mask(double *state, float *mask, int64_t n, float keep) {
  double s0 = state[0], s1 = state[1], s2 = state[2], c = state[3];
  for (int64_t i = 0; i < n; i++) {
    double t = 2091639.0 * s0 + c * 2.3283064365386963e-10;
    s0 = s1;
    s1 = s2;
    c = (double)(int32_t)t;
    s2 = t - c;
    float u = (float)s2;
    mask[i] = floorf(u + keep) / keep;
  }
  state[0] = s0;
  state[1] = s1;
  state[2] = s2;
  state[3] = c;
}
