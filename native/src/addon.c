/* N-API bindings: every kernel reads and writes typed arrays in place (no copies). Each binding
 * checks that the arrays are long enough for the sizes it is given, so a bug on the JavaScript
 * side is a thrown RangeError, never a write past the end of a buffer. */
#include "bindings.h"
#include "napi_call.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value set_threads(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 1);
  if (!c.failed) RUN(mt_set_threads((int)num(&c, 0)));
  return undef(env);
}

static napi_value get_threads(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value v;
  napi_create_int32(env, mt_get_threads(), &v);
  return v;
}

/* batchMatMul(a, b, out, batch, aBatchStride, bBatchStride, M, N, K, transA, transB) */
static napi_value batch_matmul(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 11);
  int batch = (int)num(&c, 3), as = (int)num(&c, 4), bs = (int)num(&c, 5);
  int M = (int)num(&c, 6), N = (int)num(&c, 7), K = (int)num(&c, 8);
  int ta = (int)num(&c, 9), tb = (int)num(&c, 10);
  size_t needA = batch > 0 ? (size_t)(batch - 1) * as + (size_t)M * K : 0;
  size_t needB = batch > 0 ? (size_t)(batch - 1) * bs + (size_t)K * N : 0;
  float *a = f32(&c, 0, needA), *b = f32(&c, 1, needB), *out = f32(&c, 2, (size_t)batch * M * N);
  if (!c.failed) RUN(mt_batch_matmul(a, b, out, batch, as, bs, M, N, K, ta, tb));
  return undef(env);
}

/* biasActivation(out, bias | null, rows, cols, act, alpha) */
static napi_value bias_activation(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  int64_t rows = (int64_t)num(&c, 2);
  int cols = (int)num(&c, 3);
  float *out = f32(&c, 0, (size_t)(rows * cols));
  float *bias = is_null(&c, 1) ? NULL : f32(&c, 1, (size_t)cols);
  if (!c.failed) RUN(mt_bias_activation(out, bias, rows, cols, (int)num(&c, 4), (float)num(&c, 5)));
  return undef(env);
}

/* binary(op, a, b, out, shape, aStrides, bStrides) */
static napi_value binary(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 7);
  size_t rank = 0;
  int32_t *shape = (int32_t *)typed(&c, 4, napi_int32_array, 0, &rank);
  if (!c.failed && rank > MT_MAX_RANK) fail(&c, "meshtrain native: binary op rank above 6");
  int32_t *as = i32(&c, 5, rank), *bs = i32(&c, 6, rank);
  if (c.failed) return undef(env);
  size_t total = 1, lastA = 0, lastB = 0;
  for (size_t d = 0; d < rank; d++) {
    if (shape[d] < 0 || as[d] < 0 || bs[d] < 0) fail(&c, "meshtrain native: negative size or stride");
    total *= (size_t)shape[d];
    if (shape[d] > 0) {
      lastA += (size_t)as[d] * (shape[d] - 1);
      lastB += (size_t)bs[d] * (shape[d] - 1);
    }
  }
  float *a = f32(&c, 1, total ? lastA + 1 : 0), *b = f32(&c, 2, total ? lastB + 1 : 0), *out = f32(&c, 3, total);
  if (!c.failed) RUN(mt_binary((int)num(&c, 0), a, b, out, (int)rank, shape, as, bs));
  return undef(env);
}

/* unary(op, x, out, p1, p2) */
static napi_value unary(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 5);
  size_t n = 0;
  float *x = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  float *out = f32(&c, 2, n);
  if (!c.failed) RUN(mt_unary((int)num(&c, 0), x, out, (int64_t)n, (float)num(&c, 3), (float)num(&c, 4)));
  return undef(env);
}

/* reluGrad(dy, y, dx) */
static napi_value relu_grad(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  size_t n = 0;
  float *dy = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *y = f32(&c, 1, n), *dx = f32(&c, 2, n);
  if (!c.failed) RUN(mt_relu_grad(dy, y, dx, (int64_t)n));
  return undef(env);
}

/* addN([a, b, ...], out) */
static napi_value add_n(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 2);
  size_t n = 0;
  float *out = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  uint32_t count = 0;
  if (!c.failed) napi_get_array_length(env, c.argv[0], &count);
  if (count == 0) fail(&c, "meshtrain native: addN of nothing");
  if (c.failed) return undef(env);
  const float **inputs = (const float **)malloc(sizeof(float *) * count);
  for (uint32_t k = 0; k < count && !c.failed; k++) {
    napi_value el;
    napi_get_element(env, c.argv[0], k, &el);
    c.argv[MAX_ARGS - 1] = el;
    inputs[k] = f32(&c, MAX_ARGS - 1, n);
  }
  if (!c.failed) RUN(mt_add_n(inputs, (int)count, out, (int64_t)n));
  free(inputs);
  return undef(env);
}

/* reduce(op, x, out, outer, reduce, inner) */
static napi_value reduce(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  int64_t outer = (int64_t)num(&c, 3), red = (int64_t)num(&c, 4), inner = (int64_t)num(&c, 5);
  float *x = f32(&c, 1, (size_t)(outer * red * inner)), *out = f32(&c, 2, (size_t)(outer * inner));
  if (!c.failed) RUN(mt_reduce((int)num(&c, 0), x, out, outer, red, inner));
  return undef(env);
}

/* softmax(x, out, rows, cols) */
static napi_value softmax(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 4);
  int64_t rows = (int64_t)num(&c, 2);
  int cols = (int)num(&c, 3);
  float *x = f32(&c, 0, (size_t)(rows * cols)), *out = f32(&c, 1, (size_t)(rows * cols));
  if (!c.failed) RUN(mt_softmax(x, out, rows, cols));
  return undef(env);
}


/* sgd(w, g, negLr) */
static napi_value sgd(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  size_t n = 0;
  float *w = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *g = f32(&c, 1, n);
  if (!c.failed) RUN(mt_sgd(w, g, (int64_t)n, (float)num(&c, 2)));
  return undef(env);
}

/* momentum(w, acc, g, negLr, momentum, nesterov) */
static napi_value momentum(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  size_t n = 0;
  float *w = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *acc = f32(&c, 1, n), *g = f32(&c, 2, n);
  if (!c.failed) RUN(mt_momentum(w, acc, g, (int64_t)n, (float)num(&c, 3), (float)num(&c, 4), (int)num(&c, 5)));
  return undef(env);
}

/* adam(w, m, v, g, beta1, 1-beta1, beta2, 1-beta2, 1-accBeta1, 1-accBeta2, epsilon, negLr) */
static napi_value adam(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 12);
  size_t n = 0;
  float *w = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *m = f32(&c, 1, n), *v = f32(&c, 2, n), *g = f32(&c, 3, n);
  if (!c.failed)
    RUN(mt_adam(w, m, v, g, (int64_t)n, (float)num(&c, 4), (float)num(&c, 5), (float)num(&c, 6), (float)num(&c, 7),
                (float)num(&c, 8), (float)num(&c, 9), (float)num(&c, 10), (float)num(&c, 11)));
  return undef(env);
}

/* rmsprop(w, ms, mom, mg | null, g, decay, 1-decay, momentum, lr, epsilon, centered) */
static napi_value rmsprop(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 11);
  size_t n = 0;
  float *w = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *ms = f32(&c, 1, n), *mom = f32(&c, 2, n);
  int centered = (int)num(&c, 10);
  float *mg = centered ? f32(&c, 3, n) : NULL;
  float *g = f32(&c, 4, n);
  if (!c.failed)
    RUN(mt_rmsprop(w, ms, mom, mg, g, (int64_t)n, (float)num(&c, 5), (float)num(&c, 6), (float)num(&c, 7), (float)num(&c, 8),
                   (float)num(&c, 9), centered));
  return undef(env);
}

/* accumulate(dst, src, dstOffset): dst[dstOffset + i] += src[i], for the all-reduce. */
static napi_value accumulate(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  size_t n = 0, dn = 0;
  float *src = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  float *dst = (float *)typed(&c, 0, napi_float32_array, 0, &dn);
  size_t off = (size_t)num(&c, 2);
  if (!c.failed && off + n > dn) fail(&c, "meshtrain native: accumulate beyond the destination");
  if (!c.failed) {
    float *d = dst + off;
    RUN(for (size_t i = 0; i < n; i++) d[i] += src[i]);
  }
  return undef(env);
}

/* accumulateBytes(dst, srcBytes, dstOffset): as accumulate, from raw little-endian bytes at any
 * alignment (a frame sliced out of a socket read), so no aligned copy is needed first. */
static napi_value accumulate_bytes(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  size_t dn = 0, bn = 0;
  float *dst = (float *)typed(&c, 0, napi_float32_array, 0, &dn);
  uint8_t *src = (uint8_t *)typed(&c, 1, napi_uint8_array, 0, &bn);
  size_t off = (size_t)num(&c, 2);
  size_t n = bn / sizeof(float);
  if (!c.failed && off + n > dn) fail(&c, "meshtrain native: accumulate beyond the destination");
  if (!c.failed) {
    float *d = dst + off;
    RUN(for (size_t i = 0; i < n; i++) {
      float v;
      memcpy(&v, src + i * sizeof(float), sizeof(float));
      d[i] += v;
    });
  }
  return undef(env);
}

/* scale(x, alpha): x *= alpha in place (a replica's gradient times its share of the batch). */
static napi_value scale(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 2);
  size_t n = 0;
  float *x = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float alpha = (float)num(&c, 1);
  if (!c.failed) RUN(for (size_t i = 0; i < n; i++) x[i] *= alpha);
  return undef(env);
}

/* allFinite(x): whether no value is NaN or Infinity, by their exponent bits (all ones), which
 * the compiler checks a vector at a time: a step's gradient is checked every step. */
static napi_value all_finite(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 1);
  size_t n = 0;
  const uint32_t *x = (const uint32_t *)typed(&c, 0, napi_float32_array, 0, &n);
  uint32_t bad = 0;
  if (!c.failed) {
    for (size_t i = 0; i < n; i++) bad |= (uint32_t)((x[i] & 0x7f800000u) == 0x7f800000u);
  }
  napi_value v;
  napi_get_boolean(env, bad == 0, &v);
  return c.failed ? undef(env) : v;
}

/* trimMemory(): gives the memory malloc keeps free in its arenas (every thread's) back to the
 * system, so a resident set read just after is what the process holds; false where it cannot
 * (not glibc) or nothing went back. */
static napi_value trim_memory(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value v;
  napi_get_boolean(env, released != 0, &v);
  return v;
}

#define EXPORT(name, fn)                                          \
  do {                                                           \
    napi_value f;                                                \
    napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, NULL, &f); \
    napi_set_named_property(env, exports, name, f);              \
  } while (0)

static napi_value init(napi_env env, napi_value exports) {
#ifdef __GLIBC__
  /* glibc raises its mmap threshold each time a large block is freed, after which blocks of up
   * to 32 MB come from arenas that keep freed memory: a worker's resident set then crept 20-80
   * MB above what it held, most under ZeRO-3's many gathers. Fixed at 128 KB, large blocks are
   * mapped and returned when freed (bench:sharded, 11.4M MLP on 4 workers: the same samples/s). */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  EXPORT("setThreads", set_threads);
  EXPORT("getThreads", get_threads);
  EXPORT("batchMatMul", batch_matmul);
  EXPORT("biasActivation", bias_activation);
  EXPORT("binary", binary);
  EXPORT("unary", unary);
  EXPORT("reluGrad", relu_grad);
  EXPORT("addN", add_n);
  EXPORT("reduce", reduce);
  EXPORT("softmax", softmax);
  EXPORT("gatherRows", mt_bind_gather_rows);
  EXPORT("segmentSum", mt_bind_segment_sum);
  EXPORT("conv2d", mt_bind_conv2d);
  EXPORT("conv2dBackpropInput", mt_bind_conv2d_bi);
  EXPORT("conv2dBackpropFilter", mt_bind_conv2d_bf);
  EXPORT("depthwiseConv2d", mt_bind_depthwise);
  EXPORT("depthwiseBackpropInput", mt_bind_depthwise_bi);
  EXPORT("depthwiseBackpropFilter", mt_bind_depthwise_bf);
  EXPORT("maxPool", mt_bind_max_pool);
  EXPORT("maxPoolGrad", mt_bind_max_pool_grad);
  EXPORT("avgPool", mt_bind_avg_pool);
  EXPORT("avgPoolGrad", mt_bind_avg_pool_grad);
  EXPORT("sgd", sgd);
  EXPORT("momentum", momentum);
  EXPORT("adam", adam);
  EXPORT("rmsprop", rmsprop);
  EXPORT("accumulate", accumulate);
  EXPORT("accumulateBytes", accumulate_bytes);
  EXPORT("scale", scale);
  EXPORT("allFinite", all_finite);
  EXPORT("trimMemory", trim_memory);
  mt_register_data_plane(env, exports);
  mt_register_half(env, exports);
  mt_register_step(env, exports);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
