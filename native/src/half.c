/* Bulk 16-bit conversions for compressed all-reduces and parameter-server pushes. Plain IEEE
 * arithmetic where any is done (no flush-to-zero: these run outside the kernels' RUN), so the
 * results match the JavaScript codec bit for bit. A gradient of 11 million values passes through
 * here three times a step, so where the CPU has AVX2 eight values go at a time: fp16 by its own
 * conversions (F16C), which round to nearest even as half.h does, bf16 by half.h's integer
 * rounding done lane-wise; every NaN becomes the one NaN half.h makes. */
#include "half.h"
#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
#define HALF_F16C 1

static inline __m128i fp16x8(__m256 x) {
  __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  __m128i mask = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
  return _mm_blendv_epi8(h, _mm_set1_epi16(0x7e00), mask);
}

static inline __m128i bf16x8(__m256 x) {
  __m256i b = _mm256_castps_si256(x);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  __m256i h = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb), 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  h = _mm256_blendv_epi8(h, _mm256_set1_epi32(0x7fc0), nan);
  /* packus works within each 128-bit half: put the halves' results side by side */
  h = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
  return _mm256_castsi256_si128(h);
}

static inline __m128i enc8(int fmt, __m256 x) { return fmt == HALF_FP16 ? fp16x8(x) : bf16x8(x); }

static inline __m256 dec8(int fmt, __m128i h) {
  if (fmt == HALF_FP16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __m256 round8(int fmt, __m256 x) { return dec8(fmt, enc8(fmt, x)); }
#else
#define HALF_F16C 0
#endif

static inline uint16_t load16(const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return h;
}

static inline void store16(unsigned char *p, uint16_t h) { memcpy(p, &h, 2); }

void half_encode(int fmt, const float *src, unsigned char *dst, size_t n) {
  size_t i = 0;
#if HALF_F16C
  for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(dst + 2 * i), enc8(fmt, _mm256_loadu_ps(src + i)));
#endif
  for (; i < n; i++) store16(dst + 2 * i, half_encode1(fmt, src[i]));
}

void half_decode(int fmt, const unsigned char *src, float *dst, size_t n, int mode) {
  size_t i = 0;
#if HALF_F16C
  for (; i + 8 <= n; i += 8) {
    __m256 v = dec8(fmt, _mm_loadu_si128((const __m128i *)(src + 2 * i)));
    if (mode != 0) v = _mm256_add_ps(_mm256_loadu_ps(dst + i), v);
    if (mode == 2) v = round8(fmt, v);
    _mm256_storeu_ps(dst + i, v);
  }
#endif
  for (; i < n; i++) {
    float v = half_decode1(fmt, load16(src + 2 * i));
    if (mode == 0) {
      dst[i] = v;
    } else {
      float s = dst[i] + v;
      dst[i] = mode == 2 ? half_decode1(fmt, half_encode1(fmt, s)) : s;
    }
  }
}

void half_round(int fmt, float *x, size_t n) {
  size_t i = 0;
#if HALF_F16C
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, round8(fmt, _mm256_loadu_ps(x + i)));
#endif
  for (; i < n; i++) x[i] = half_decode1(fmt, half_encode1(fmt, x[i]));
}

void half_feedback(int fmt, float *g, float *r, size_t n) {
  size_t i = 0;
#if HALF_F16C
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_loadu_ps(r + i));
    __m256 q = round8(fmt, v);
    _mm256_storeu_ps(r + i, _mm256_sub_ps(v, q));
    _mm256_storeu_ps(g + i, q);
  }
#endif
  for (; i < n; i++) {
    float v = g[i] + r[i];
    float q = half_decode1(fmt, half_encode1(fmt, v));
    r[i] = v - q;
    g[i] = q;
  }
}
