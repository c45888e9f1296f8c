/* Float exp, tanh, sigmoid and erf that the compiler vectorizes (no calls, no branches): libm's
 * double versions cost a transformer step more than its GEMMs (a softmax over 2M scores, GELU
 * over 2M values). Each is within a few float32 roundings of the exact value: exp by Cody-Waite
 * reduction and Cephes' polynomial, tanh by Cephes' polynomial near 0 and exp elsewhere, erf by
 * Abramowitz and Stegun 7.1.26, the formula TF.js's own Erf kernel uses. */
#ifndef MESHTRAIN_FASTMATH_H
#define MESHTRAIN_FASTMATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float mt_exp(float x) {
  x = x < -87.33f ? -87.33f : (x > 88.72f ? 88.72f : x);
  float n = floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float mt_sigmoid(float x) { return 1.0f / (1.0f + mt_exp(-x)); }

static inline float mt_tanh(float x) {
  float a = fabsf(x);
  float z = x * x;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  float big = 1.0f - 2.0f / (mt_exp(2.0f * a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.625f ? small : big;
}

static inline float mt_erf(float v) {
  const float p = 0.3275911f, a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f, a4 = -1.453152027f, a5 = 1.061405429f;
  float x = fabsf(v);
  float t = 1.0f / (1.0f + p * x);
  float y = 1.0f - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * mt_exp(-x * x);
  return v < 0.0f ? -y : y;
}
#endif
