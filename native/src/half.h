/* 16-bit floats for gradient compression: IEEE half (fp16) and bfloat16 (bf16), converted from
 * float32 by rounding to nearest, ties to even, with integer operations only. Integer
 * operations keep the result independent of the thread's flush-to-zero mode (kernels run with
 * it on, the data plane's threads with it off) and bit-identical to the JavaScript codec
 * (sdk/collectives/half-codec.ts), so the two data planes produce the same sums. */
#ifndef MESHTRAIN_HALF_H
#define MESHTRAIN_HALF_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Wire formats of an all-reduce's leading elements: 32-bit floats, or one of the two halves. */
enum { HALF_NONE = 0, HALF_FP16 = 1, HALF_BF16 = 2 };

static inline uint32_t half_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return x;
}

static inline float half_float(uint32_t x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static inline uint16_t fp16_of(uint32_t x) {
  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7e00u;                     /* NaN: one quiet NaN (JavaScript keeps no payload) */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* 65520 and up round to Infinity */
  if (ax >= 0x38800000u) {                                  /* normal: drop 13 bits, rebias 127 -> 15 */
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;
    return (uint16_t)(sign | (r >> 13));
  }
  if (ax < 0x33000000u) return (uint16_t)sign; /* at most 2^-25: rounds to zero */
  /* subnormal: the value in units of 2^-24, rounded */
  uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

static inline uint32_t f32_of_fp16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);
  if (e != 0) return sign | ((e + 112u) << 23) | (m << 13);
  /* subnormal: m * 2^-24 is a normal float32, computed exactly */
  return sign | half_bits((float)m * 0x1p-24f);
}

static inline uint16_t bf16_of(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u; /* NaN: one quiet NaN, as fp16_of */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline uint32_t f32_of_bf16(uint16_t h) { return (uint32_t)h << 16; }

static inline uint16_t half_encode1(int fmt, float f) { return fmt == HALF_FP16 ? fp16_of(half_bits(f)) : bf16_of(half_bits(f)); }

static inline float half_decode1(int fmt, uint16_t h) { return half_float(fmt == HALF_FP16 ? f32_of_fp16(h) : f32_of_bf16(h)); }

/* src (n floats) -> dst (n little-endian 16-bit values, any alignment). */
void half_encode(int fmt, const float *src, unsigned char *dst, size_t n);
/* dst[i] = (mode 0) or += (mode 1) the decoded src[i]; mode 2 adds, then rounds the sum to the
 * format in place (the owner of a segment, so every replica ends with the same bits). */
void half_decode(int fmt, const unsigned char *src, float *dst, size_t n, int mode);
/* Each value to the nearest one the format holds, in place. */
void half_round(int fmt, float *x, size_t n);
/* Error feedback: v = g + r; g = v rounded to the format; r = v - g. */
void half_feedback(int fmt, float *g, float *r, size_t n);

#endif
