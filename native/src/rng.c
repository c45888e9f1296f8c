#include <math.h>
#include <stdint.h>
#include "step.h"

/* tf.dropout draws its noise with tf.randomUniform, whose generator is seedrandom's Alea (seeded
 * by Math.random() unless the layer has a seed). Alea is a lag-3 multiply-with-carry generator:
 * in double it computes t = 2091639 s[i-3] + c 2^-32, c = floor(t), s = t - c, every value exact
 * (s has 32 fractional bits). The same in 64-bit integers gives the same numbers to the bit, and
 * its carry chain is one add and one shift, where the doubles' is an add, a floor and a subtract.
 * Each draw is stored as float32, as TF.js's Float32Array stores it, before floor(u + keep) / keep
 * is taken in float32. sdk/backends/native/step/alea.ts seeds the state. */
void mt_dropout_mask(double *state, float *mask, int64_t n, float keep) {
  uint64_t x0 = (uint64_t)(state[0] * 4294967296.0), x1 = (uint64_t)(state[1] * 4294967296.0);
  uint64_t x2 = (uint64_t)(state[2] * 4294967296.0), c = (uint64_t)state[3];
  for (int64_t i = 0; i < n; i++) {
    uint64_t t = 2091639ull * x0 + c;
    x0 = x1;
    x1 = x2;
    c = t >> 32;
    x2 = t & 0xffffffffull;
    float u = (float)((double)x2 * 2.3283064365386963e-10);
    mask[i] = floorf(u + keep) / keep;
  }
  state[0] = (double)x0 * 2.3283064365386963e-10;
  state[1] = (double)x1 * 2.3283064365386963e-10;
  state[2] = (double)x2 * 2.3283064365386963e-10;
  state[3] = (double)c;
}
