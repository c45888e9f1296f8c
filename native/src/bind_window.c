/* N-API bindings of the window kernels: convolutions (im2col + GEMM, depthwise) and pooling. */
#include "bindings.h"
#include "napi_call.h"

static int64_t prod(const int32_t *p, int a, int b, int cc, int d) { return (int64_t)p[a] * p[b] * p[cc] * p[d]; }

/* Sizes of a convolution's input, output and filter from its parameters. */
static void conv_sizes(const int32_t *p, int64_t *in, int64_t *out, int64_t *filter) {
  *in = prod(p, P_BATCH, P_INH, P_INW, P_INC);
  *out = prod(p, P_BATCH, P_OUTH, P_OUTW, P_OUTC);
  *filter = (int64_t)p[P_KH] * p[P_KW] * p[P_INC] * p[P_OUTC];
}

/* The three arrays of a convolution (or depthwise) call, checked against their sizes. kind 0:
 * (x, filter) -> out; 1: (dy, filter) -> dx; 2: (x, dy) -> dfilter. */
static void conv_arrays(call *c, int kind, int64_t in, int64_t out, int64_t filter, float **a, float **b, float **o) {
  int64_t la = kind == 1 ? out : in, lb = kind == 2 ? out : filter, lo = kind == 0 ? out : kind == 1 ? in : filter;
  *a = f32(c, 0, (size_t)la);
  *b = f32(c, 1, (size_t)lb);
  *o = f32(c, 2, (size_t)lo);
}

typedef void (*conv_fn)(const float *, const float *, float *, const int32_t *, float *, int64_t);

/* conv(a, b, out, params, scratch): which of x / dy / filter each argument is depends on `kind`. */
static napi_value conv_common(napi_env env, napi_callback_info info, int kind) {
  call c = begin(env, info, 5);
  int32_t *p = i32(&c, 3, P_COUNT);
  if (c.failed) return undef(env);
  int64_t in, out, filter;
  conv_sizes(p, &in, &out, &filter);
  size_t scratchLen = 0;
  float *scratch = (float *)typed(&c, 4, napi_float32_array, 0, &scratchLen);
  float *a, *b, *o;
  conv_arrays(&c, kind, in, out, filter, &a, &b, &o);
  int64_t perImage = (int64_t)p[P_OUTH] * p[P_OUTW] * p[P_KH] * p[P_KW] * p[P_INC];
  if (!c.failed && (int64_t)scratchLen < perImage && p[P_BATCH] > 0) fail(&c, "meshtrain native: conv scratch smaller than one image's columns");
  if (c.failed) return undef(env);
  conv_fn fns[3] = {mt_conv2d, mt_conv2d_backprop_input, mt_conv2d_backprop_filter};
  RUN(fns[kind](a, b, o, p, scratch, (int64_t)scratchLen));
  return undef(env);
}

napi_value mt_bind_conv2d(napi_env env, napi_callback_info info) { return conv_common(env, info, 0); }
napi_value mt_bind_conv2d_bi(napi_env env, napi_callback_info info) { return conv_common(env, info, 1); }
napi_value mt_bind_conv2d_bf(napi_env env, napi_callback_info info) { return conv_common(env, info, 2); }

/* depthwise*(a, b, out, params, mult); params' OUTC is inC * mult */
static napi_value depthwise_common(napi_env env, napi_callback_info info, int kind) {
  call c = begin(env, info, 5);
  int32_t *p = i32(&c, 3, P_COUNT);
  int mult = (int)num(&c, 4);
  if (c.failed) return undef(env);
  if (p[P_OUTC] != p[P_INC] * mult) fail(&c, "meshtrain native: depthwise output channels must be inC * multiplier");
  int64_t in, out, filter;
  conv_sizes(p, &in, &out, &filter);
  filter = (int64_t)p[P_KH] * p[P_KW] * p[P_INC] * mult;
  float *a, *b, *o;
  conv_arrays(&c, kind, in, out, filter, &a, &b, &o);
  if (c.failed) return undef(env);
  if (kind == 0) RUN(mt_depthwise_conv2d(a, b, o, p, mult));
  else if (kind == 1) RUN(mt_depthwise_backprop_input(a, b, o, p, mult));
  else RUN(mt_depthwise_backprop_filter(a, b, o, p, mult));
  return undef(env);
}

napi_value mt_bind_depthwise(napi_env env, napi_callback_info info) { return depthwise_common(env, info, 0); }
napi_value mt_bind_depthwise_bi(napi_env env, napi_callback_info info) { return depthwise_common(env, info, 1); }
napi_value mt_bind_depthwise_bf(napi_env env, napi_callback_info info) { return depthwise_common(env, info, 2); }

/* maxPool(x, out, params), avgPool(x, out, params) */
static napi_value pool_common(napi_env env, napi_callback_info info, int avg) {
  call c = begin(env, info, 3);
  int32_t *p = i32(&c, 2, P_COUNT);
  if (c.failed) return undef(env);
  if (p[P_OUTC] != p[P_INC]) fail(&c, "meshtrain native: pooling keeps the channel count");
  float *x = f32(&c, 0, (size_t)prod(p, P_BATCH, P_INH, P_INW, P_INC));
  float *o = f32(&c, 1, (size_t)prod(p, P_BATCH, P_OUTH, P_OUTW, P_OUTC));
  if (c.failed) return undef(env);
  if (avg) RUN(mt_avg_pool(x, o, p));
  else RUN(mt_max_pool(x, o, p));
  return undef(env);
}
napi_value mt_bind_max_pool(napi_env env, napi_callback_info info) { return pool_common(env, info, 0); }
napi_value mt_bind_avg_pool(napi_env env, napi_callback_info info) { return pool_common(env, info, 1); }

/* maxPoolGrad(dy, x, dx, params) */
napi_value mt_bind_max_pool_grad(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 4);
  int32_t *p = i32(&c, 3, P_COUNT);
  if (c.failed) return undef(env);
  size_t in = (size_t)prod(p, P_BATCH, P_INH, P_INW, P_INC), out = (size_t)prod(p, P_BATCH, P_OUTH, P_OUTW, P_OUTC);
  float *dy = f32(&c, 0, out), *x = f32(&c, 1, in), *dx = f32(&c, 2, in);
  if (!c.failed) RUN(mt_max_pool_grad(dy, x, dx, p));
  return undef(env);
}

/* avgPoolGrad(dy, dx, params) */
napi_value mt_bind_avg_pool_grad(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  int32_t *p = i32(&c, 2, P_COUNT);
  if (c.failed) return undef(env);
  float *dy = f32(&c, 0, (size_t)prod(p, P_BATCH, P_OUTH, P_OUTW, P_OUTC));
  float *dx = f32(&c, 1, (size_t)prod(p, P_BATCH, P_INH, P_INW, P_INC));
  if (!c.failed) RUN(mt_avg_pool_grad(dy, dx, p));
  return undef(env);
}
