/* Row gathers and their gradient, for embeddings: TF.js's cpu UnsortedSegmentSum builds a mask
 * and a reduction per segment (numSegments x n x inner work: 15.8 s for one backward pass of a
 * 10,000-word embedding), where one pass over the rows does it. */
#include "bindings.h"
#include "napi_call.h"

/* out[i] = x[ids[i]], rows of `inner` floats; the binding checked every id is in range. */
void mt_gather_rows(const float *x, const int32_t *ids, float *out, int64_t n, int64_t inner) {
  for (int64_t i = 0; i < n; i++) memcpy(out + i * inner, x + (int64_t)ids[i] * inner, sizeof(float) * (size_t)inner);
}

/* out[s] = the sum of the rows of `values` whose id is s, added in row order in double and
 * rounded once (as the stock kernel's reduction adds them, so the two agree to the bit); ids
 * outside [0, segments) are dropped. */
void mt_segment_sum(const float *values, const int32_t *ids, float *out, int64_t n, int64_t inner, int64_t segments) {
  size_t total = (size_t)(segments * inner);
  double *acc = (double *)calloc(total > 0 ? total : 1, sizeof(double));
  if (!acc) {
    /* No memory for the double sums: float ones, a rounding apart, rather than nothing. */
    memset(out, 0, sizeof(float) * total);
    for (int64_t i = 0; i < n; i++) {
      if (ids[i] < 0 || ids[i] >= segments) continue;
      for (int64_t k = 0; k < inner; k++) out[ids[i] * inner + k] += values[i * inner + k];
    }
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t s = ids[i];
    if (s < 0 || s >= segments) continue;
    double *dst = acc + s * inner;
    const float *src = values + i * inner;
    for (int64_t k = 0; k < inner; k++) dst[k] += src[k];
  }
  for (size_t j = 0; j < total; j++) out[j] = (float)acc[j];
  free(acc);
}

/* gatherRows(x, ids, out, n, inner, rows): throws (RangeError-like) on an id outside [0, rows). */
napi_value mt_bind_gather_rows(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  int64_t n = (int64_t)num(&c, 3), inner = (int64_t)num(&c, 4), rows = (int64_t)num(&c, 5);
  float *x = f32(&c, 0, (size_t)(rows * inner));
  int32_t *ids = i32(&c, 1, (size_t)n);
  float *out = f32(&c, 2, (size_t)(n * inner));
  for (int64_t i = 0; !c.failed && i < n; i++) {
    if (ids[i] < 0 || ids[i] >= rows) fail(&c, "meshtrain native: a gathered index is outside the rows");
  }
  if (!c.failed) RUN(mt_gather_rows(x, ids, out, n, inner));
  return undef(env);
}

/* segmentSum(values, ids, out, n, inner, segments) */
napi_value mt_bind_segment_sum(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  int64_t n = (int64_t)num(&c, 3), inner = (int64_t)num(&c, 4), segments = (int64_t)num(&c, 5);
  float *values = f32(&c, 0, (size_t)(n * inner));
  int32_t *ids = i32(&c, 1, (size_t)n);
  float *out = f32(&c, 2, (size_t)(segments * inner));
  if (!c.failed) RUN(mt_segment_sum(values, ids, out, n, inner, segments));
  return undef(env);
}
