/* N-API bindings of the graph step's kernels (step.h). Each checks its arrays against the sizes
 * it is given, as every binding does (napi_call.h). */
#include "bindings.h"
#include "napi_call.h"
#include "step.h"

/* A float32 array argument of at least n values, or NULL when the argument is null. */
static float *opt_f32(call *c, size_t i, size_t n) { return is_null(c, i) ? NULL : f32(c, i, n); }

/* sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc): views (subarrays) give offsets. */
static napi_value sgemm(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 13);
  int ta = (int)num(&c, 0), tb = (int)num(&c, 1), M = (int)num(&c, 2), N = (int)num(&c, 3), K = (int)num(&c, 4);
  int lda = (int)num(&c, 7), ldb = (int)num(&c, 9), ldc = (int)num(&c, 12);
  if (M < 0 || N < 0 || K < 0 || lda < 1 || ldb < 1 || ldc < 1) fail(&c, "meshtrain native: sgemm sizes");
  size_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  size_t needA = ar && ac ? (ar - 1) * lda + ac : 0, needB = br && bc ? (br - 1) * ldb + bc : 0;
  size_t needC = M && N ? (size_t)(M - 1) * ldc + N : 0;
  float *a = f32(&c, 6, needA), *b = f32(&c, 8, needB), *o = f32(&c, 11, needC);
  if (!c.failed) RUN(mt_sgemm(ta, tb, M, N, K, (float)num(&c, 5), a, lda, b, ldb, (float)num(&c, 10), o, ldc));
  return undef(env);
}

static size_t batched_need(size_t rows, size_t cols, int ld, double so, double si, int outer, int inner) {
  if (!rows || !cols || !outer || !inner) return 0;
  return (size_t)((outer - 1) * so + (inner - 1) * si) + (rows - 1) * ld + cols;
}

/* gemmBatched(A, B, C, dims Int32Array[ta, tb, M, N, K, lda, ldb, ldc, outer, inner],
 * strides Float64Array[aOuter, aInner, bOuter, bInner, cOuter, cInner], alpha, beta) */
static napi_value gemm_batched(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 7);
  int32_t *d = i32(&c, 3, 10);
  size_t sn = 0;
  double *s = (double *)typed(&c, 4, napi_float64_array, 6, &sn);
  if (c.failed) return undef(env);
  int ta = d[0], tb = d[1], M = d[2], N = d[3], K = d[4], outer = d[8], inner = d[9];
  for (int k = 0; k < 10; k++) if (d[k] < 0) fail(&c, "meshtrain native: gemmBatched sizes");
  for (int k = 0; k < 6; k++) if (s[k] < 0) fail(&c, "meshtrain native: gemmBatched strides");
  if (c.failed) return undef(env);
  float *a = f32(&c, 0, batched_need(ta ? K : M, ta ? M : K, d[5], s[0], s[1], outer, inner));
  float *b = f32(&c, 1, batched_need(tb ? N : K, tb ? K : N, d[6], s[2], s[3], outer, inner));
  float *o = f32(&c, 2, batched_need(M, N, d[7], s[4], s[5], outer, inner));
  if (!c.failed)
    RUN(mt_gemm_batched(ta, tb, M, N, K, (float)num(&c, 5), a, d[5], (int64_t)s[0], (int64_t)s[1], b, d[6], (int64_t)s[2],
                        (int64_t)s[3], (float)num(&c, 6), o, d[7], (int64_t)s[4], (int64_t)s[5], outer, inner));
  return undef(env);
}

/* actForward(act, x, y, alpha) */
static napi_value act_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 4);
  size_t n = 0;
  float *x = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  float *y = f32(&c, 2, n);
  int act = (int)num(&c, 0);
  if (act < 0 || act >= MT_A_COUNT) fail(&c, "meshtrain native: unknown activation");
  if (!c.failed) RUN(mt_act_forward(act, x, y, (int64_t)n, (float)num(&c, 3)));
  return undef(env);
}

/* actBackward(act, dy, x | null, y | null, dx, alpha, add) */
static napi_value act_backward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 7);
  size_t n = 0;
  int act = (int)num(&c, 0);
  float *dy = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  float *x = opt_f32(&c, 2, n), *y = opt_f32(&c, 3, n), *dx = f32(&c, 4, n);
  if (act < 0 || act >= MT_A_COUNT) fail(&c, "meshtrain native: unknown activation");
  if (!c.failed && act != MT_A_LINEAR && (mt_act_needs_input(act) ? !x : !y)) fail(&c, "meshtrain native: activation gradient without the values it needs");
  if (!c.failed) RUN(mt_act_backward(act, dy, x, y, dx, (int64_t)n, (float)num(&c, 5), (int)num(&c, 6)));
  return undef(env);
}

/* softmaxAxis(x, y, outer, n, inner) */
static napi_value softmax_axis(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 5);
  int64_t o = (int64_t)num(&c, 2), n = (int64_t)num(&c, 3), in = (int64_t)num(&c, 4);
  size_t total = (size_t)(o * n * in);
  float *x = f32(&c, 0, total), *y = f32(&c, 1, total);
  if (!c.failed) RUN(mt_softmax_axis(x, y, o, n, in));
  return undef(env);
}

/* softmaxAxisBackward(y, dy, dx, outer, n, inner, add) */
static napi_value softmax_axis_backward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 7);
  int64_t o = (int64_t)num(&c, 3), n = (int64_t)num(&c, 4), in = (int64_t)num(&c, 5);
  size_t total = (size_t)(o * n * in);
  float *y = f32(&c, 0, total), *dy = f32(&c, 1, total), *dx = f32(&c, 2, total);
  if (!c.failed) RUN(mt_softmax_axis_backward(y, dy, dx, o, n, in, (int)num(&c, 6)));
  return undef(env);
}

/* bnForward(x, y, rows, C, gamma | null, beta | null, eps, mean, var, invstd) */
static napi_value bn_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 10);
  int64_t rows = (int64_t)num(&c, 2);
  int C = (int)num(&c, 3);
  size_t total = (size_t)(rows * C);
  float *x = f32(&c, 0, total), *y = f32(&c, 1, total), *g = opt_f32(&c, 4, C), *b = opt_f32(&c, 5, C);
  float *mean = f32(&c, 7, C), *var = f32(&c, 8, C), *is = f32(&c, 9, C);
  if (!c.failed) RUN(mt_bn_forward(x, y, rows, C, g, b, (float)num(&c, 6), mean, var, is));
  return undef(env);
}

/* bnBackward / lnBackward(dy, x, rows, cols, mean, invstd, gamma | null, dx | null, dxAdd, dgamma | null, dbeta | null, pAdd) */
static napi_value norm_backward(napi_env env, napi_callback_info info, int layer) {
  call c = begin(env, info, 12);
  int64_t rows = (int64_t)num(&c, 2);
  int cols = (int)num(&c, 3);
  size_t total = (size_t)(rows * cols), stats = layer ? (size_t)rows : (size_t)cols;
  float *dy = f32(&c, 0, total), *x = f32(&c, 1, total), *mean = f32(&c, 4, stats), *is = f32(&c, 5, stats);
  float *g = opt_f32(&c, 6, cols), *dx = opt_f32(&c, 7, total), *dg = opt_f32(&c, 9, cols), *db = opt_f32(&c, 10, cols);
  int dxAdd = (int)num(&c, 8), pAdd = (int)num(&c, 11);
  if (c.failed) return undef(env);
  if (layer) RUN(mt_ln_backward(dy, x, rows, cols, mean, is, g, dx, dxAdd, dg, db, pAdd));
  else RUN(mt_bn_backward(dy, x, rows, cols, mean, is, g, dx, dxAdd, dg, db, pAdd));
  return undef(env);
}
static napi_value bn_backward(napi_env env, napi_callback_info info) { return norm_backward(env, info, 0); }
static napi_value ln_backward(napi_env env, napi_callback_info info) { return norm_backward(env, info, 1); }

/* lnForward(x, y, rows, cols, gamma | null, beta | null, eps, mean, invstd) */
static napi_value ln_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 9);
  int64_t rows = (int64_t)num(&c, 2);
  int cols = (int)num(&c, 3);
  size_t total = (size_t)(rows * cols);
  float *x = f32(&c, 0, total), *y = f32(&c, 1, total), *g = opt_f32(&c, 4, cols), *b = opt_f32(&c, 5, cols);
  float *mean = f32(&c, 7, rows), *is = f32(&c, 8, rows);
  if (!c.failed) RUN(mt_ln_forward(x, y, rows, cols, g, b, (float)num(&c, 6), mean, is));
  return undef(env);
}

/* The sizes of a recurrent call: dims Int32Array [B, T, H, reverse, act, ract]. */
typedef struct {
  int B, T, H, reverse, act, ract;
  size_t bth, bh, bt;
} rdims;

static rdims read_rdims(call *c, size_t i) {
  rdims r = {0};
  int32_t *d = i32(c, i, 6);
  if (c->failed) return r;
  r.B = d[0], r.T = d[1], r.H = d[2], r.reverse = d[3], r.act = d[4], r.ract = d[5];
  if (r.B < 0 || r.T < 0 || r.H < 0) fail(c, "meshtrain native: recurrent sizes");
  r.bth = (size_t)r.B * r.T * r.H;
  r.bh = (size_t)r.B * r.H;
  r.bt = (size_t)r.B * r.T;
  return r;
}

/* lstmForward(z, U, h, c, hp, mask, rmask, h0, c0, dims) */
static napi_value lstm_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 10);
  rdims d = read_rdims(&c, 9);
  float *z = f32(&c, 0, d.bth * 4), *U = f32(&c, 1, (size_t)d.H * d.H * 4), *h = f32(&c, 2, d.bth), *cc = f32(&c, 3, d.bth);
  float *hp = f32(&c, 4, d.bth), *mask = opt_f32(&c, 5, d.bt), *rm = opt_f32(&c, 6, d.bh), *h0 = opt_f32(&c, 7, d.bh), *c0 = opt_f32(&c, 8, d.bh);
  if (!c.failed) RUN(mt_lstm_forward(z, U, h, cc, hp, mask, rm, h0, c0, d.B, d.T, d.H, d.reverse, d.act, d.ract));
  return undef(env);
}

/* lstmBackward(z, c, h, dh, dcT, dz, U, mask, rmask, c0, dh0, dc0, work, dims) */
static napi_value lstm_backward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 14);
  rdims d = read_rdims(&c, 13);
  float *z = f32(&c, 0, d.bth * 4), *cc = f32(&c, 1, d.bth), *h = f32(&c, 2, d.bth), *dh = f32(&c, 3, d.bth);
  float *dcT = opt_f32(&c, 4, d.bh), *dz = f32(&c, 5, d.bth * 4), *U = f32(&c, 6, (size_t)d.H * d.H * 4);
  float *mask = opt_f32(&c, 7, d.bt), *rm = opt_f32(&c, 8, d.bh), *c0 = opt_f32(&c, 9, d.bh);
  float *dh0 = opt_f32(&c, 10, d.bh), *dc0 = opt_f32(&c, 11, d.bh), *work = f32(&c, 12, d.bh * 2);
  if (!c.failed)
    RUN(mt_lstm_backward(z, cc, h, dh, dcT, dz, U, mask, rm, c0, dh0, dc0, work, d.B, d.T, d.H, d.reverse, d.act, d.ract));
  return undef(env);
}

/* gruForward(z, U, h, hp, rh, mask, rmask, h0, dims) */
static napi_value gru_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 9);
  rdims d = read_rdims(&c, 8);
  float *z = f32(&c, 0, d.bth * 3), *U = f32(&c, 1, (size_t)d.H * d.H * 3), *h = f32(&c, 2, d.bth), *hp = f32(&c, 3, d.bth);
  float *rh = f32(&c, 4, d.bth), *mask = opt_f32(&c, 5, d.bt), *rm = opt_f32(&c, 6, d.bh), *h0 = opt_f32(&c, 7, d.bh);
  if (!c.failed) RUN(mt_gru_forward(z, U, h, hp, rh, mask, rm, h0, d.B, d.T, d.H, d.reverse, d.act, d.ract));
  return undef(env);
}

/* gruBackward(z, h, hp, dh, dz, U, mask, rmask, dh0, work, dims) */
static napi_value gru_backward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 11);
  rdims d = read_rdims(&c, 10);
  float *z = f32(&c, 0, d.bth * 3), *h = f32(&c, 1, d.bth), *hp = f32(&c, 2, d.bth), *dh = f32(&c, 3, d.bth);
  float *dz = f32(&c, 4, d.bth * 3), *U = f32(&c, 5, (size_t)d.H * d.H * 3), *mask = opt_f32(&c, 6, d.bt);
  float *rm = opt_f32(&c, 7, d.bh), *dh0 = opt_f32(&c, 8, d.bh), *work = f32(&c, 9, d.bh * 2);
  if (!c.failed) RUN(mt_gru_backward(z, h, hp, dh, dz, U, mask, rm, dh0, work, d.B, d.T, d.H, d.reverse, d.act, d.ract));
  return undef(env);
}

/* rnnForward(z, U, h, hp, mask, rmask, h0, dims) */
static napi_value rnn_forward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 8);
  rdims d = read_rdims(&c, 7);
  float *z = f32(&c, 0, d.bth), *U = f32(&c, 1, (size_t)d.H * d.H), *h = f32(&c, 2, d.bth), *hp = f32(&c, 3, d.bth);
  float *mask = opt_f32(&c, 4, d.bt), *rm = opt_f32(&c, 5, d.bh), *h0 = opt_f32(&c, 6, d.bh);
  if (!c.failed) RUN(mt_rnn_forward(z, U, h, hp, mask, rm, h0, d.B, d.T, d.H, d.reverse, d.act));
  return undef(env);
}

/* rnnBackward(z, h, dh, dz, U, mask, rmask, dh0, work, dims) */
static napi_value rnn_backward(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 10);
  rdims d = read_rdims(&c, 9);
  float *z = f32(&c, 0, d.bth), *h = f32(&c, 1, d.bth), *dh = f32(&c, 2, d.bth), *dz = f32(&c, 3, d.bth);
  float *U = f32(&c, 4, (size_t)d.H * d.H), *mask = opt_f32(&c, 5, d.bt), *rm = opt_f32(&c, 6, d.bh);
  float *dh0 = opt_f32(&c, 7, d.bh), *work = f32(&c, 8, d.bh);
  if (!c.failed) RUN(mt_rnn_backward(z, h, dh, dz, U, mask, rm, dh0, work, d.B, d.T, d.H, d.reverse, d.act));
  return undef(env);
}

/* dropoutMask(state Float64Array(4), mask, keep) */
static napi_value dropout_mask(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  double *state = (double *)typed(&c, 0, napi_float64_array, 4, NULL);
  size_t n = 0;
  float *mask = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  if (!c.failed) RUN(mt_dropout_mask(state, mask, (int64_t)n, (float)num(&c, 2)));
  return undef(env);
}

/* penalty(w, g | null, l1, l2, scale): the penalty; g += its gradient x scale. */
static napi_value penalty(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 5);
  size_t n = 0;
  float *w = (float *)typed(&c, 0, napi_float32_array, 0, &n);
  float *g = opt_f32(&c, 1, n);
  double out = 0.0;
  if (!c.failed) RUN(out = mt_penalty(w, g, (int64_t)n, num(&c, 2), num(&c, 3), num(&c, 4)));
  napi_value v;
  napi_create_double(env, out, &v);
  return c.failed ? undef(env) : v;
}

/* scatterAddRows(grad, ids, dy, n, inner, rows): grad[ids[i]] += dy[i] (rows of `inner`), ids outside [0, rows) skipped. */
static napi_value scatter_add_rows(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 6);
  int64_t n = (int64_t)num(&c, 3), inner = (int64_t)num(&c, 4), rows = (int64_t)num(&c, 5);
  float *g = f32(&c, 0, (size_t)(rows * inner)), *dy = f32(&c, 2, (size_t)(n * inner));
  int32_t *ids = i32(&c, 1, (size_t)n);
  if (!c.failed) {
    RUN(for (int64_t i = 0; i < n; i++) {
      int64_t r = ids[i];
      if (r < 0 || r >= rows) continue;
      float *dst = g + r * inner;
      const float *src = dy + i * inner;
      for (int64_t k = 0; k < inner; k++) dst[k] += src[k];
    });
  }
  return undef(env);
}

/* transpose(x, out, shape, perm) and tile(x, out, shape, reps): rank <= 6, sizes checked. */
static napi_value shape_common(napi_env env, napi_callback_info info, int tile) {
  call c = begin(env, info, 4);
  size_t rank = 0;
  int32_t *shape = (int32_t *)typed(&c, 2, napi_int32_array, 0, &rank);
  int32_t *arg = i32(&c, 3, rank);
  if (!c.failed && (rank == 0 || rank > MT_MAX_RANK)) fail(&c, "meshtrain native: transpose/tile rank outside 1-6");
  if (c.failed) return undef(env);
  size_t in = 1, out = 1;
  for (size_t d = 0; d < rank; d++) {
    if (shape[d] < 0 || arg[d] < 0 || (!tile && arg[d] >= (int32_t)rank)) fail(&c, "meshtrain native: transpose/tile arguments");
    in *= (size_t)shape[d];
    out *= (size_t)shape[d] * (tile ? (size_t)arg[d] : 1);
  }
  float *x = f32(&c, 0, in), *o = f32(&c, 1, out);
  if (c.failed) return undef(env);
  if (tile) RUN(mt_tile(x, o, (int)rank, shape, arg));
  else RUN(mt_transpose(x, o, (int)rank, shape, arg));
  return undef(env);
}
static napi_value transpose(napi_env env, napi_callback_info info) { return shape_common(env, info, 0); }
static napi_value tile(napi_env env, napi_callback_info info) { return shape_common(env, info, 1); }

#define EXPORT(name, fn)                                             \
  do {                                                               \
    napi_value f;                                                    \
    napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, NULL, &f); \
    napi_set_named_property(env, exports, name, f);                  \
  } while (0)

void mt_register_step(napi_env env, napi_value exports) {
  EXPORT("sgemm", sgemm);
  EXPORT("gemmBatched", gemm_batched);
  EXPORT("actForward", act_forward);
  EXPORT("actBackward", act_backward);
  EXPORT("softmaxAxis", softmax_axis);
  EXPORT("softmaxAxisBackward", softmax_axis_backward);
  EXPORT("bnForward", bn_forward);
  EXPORT("bnBackward", bn_backward);
  EXPORT("lnForward", ln_forward);
  EXPORT("lnBackward", ln_backward);
  EXPORT("lstmForward", lstm_forward);
  EXPORT("lstmBackward", lstm_backward);
  EXPORT("gruForward", gru_forward);
  EXPORT("gruBackward", gru_backward);
  EXPORT("rnnForward", rnn_forward);
  EXPORT("rnnBackward", rnn_backward);
  EXPORT("dropoutMask", dropout_mask);
  EXPORT("penalty", penalty);
  EXPORT("scatterAddRows", scatter_add_rows);
  EXPORT("transpose", transpose);
  EXPORT("tile", tile);
}
