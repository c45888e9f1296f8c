/* What every N-API binding shares: its arguments checked as typed arrays of at least the sizes
 * given (a bug on the JavaScript side is a thrown RangeError, never a write past a buffer), and
 * kernels run with denormals flushed. */
#ifndef MESHTRAIN_NAPI_CALL_H
#define MESHTRAIN_NAPI_CALL_H
#include <node_api.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

/* Denormal floats make x86 arithmetic up to 100x slower, and long runs make them (an Adam moment
 * of a dead unit decays geometrically). Kernels run with flush-to-zero and denormals-are-zero,
 * and the caller's mode is restored afterwards so JavaScript's own arithmetic is untouched. */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
static inline unsigned int fast_math_enter(void) {
  unsigned int old = _mm_getcsr();
  _mm_setcsr(old | 0x8040);
  return old;
}
static inline void fast_math_leave(unsigned int old) { _mm_setcsr(old); }
#else
static inline unsigned int fast_math_enter(void) { return 0; }
static inline void fast_math_leave(unsigned int old) { (void)old; }
#endif
#define RUN(stmt)                              \
  do {                                         \
    unsigned int csr_ = fast_math_enter();     \
    stmt;                                      \
    fast_math_leave(csr_);                     \
  } while (0)

#define MAX_ARGS 16

typedef struct {
  napi_env env;
  napi_value argv[MAX_ARGS];
  size_t argc;
  int failed;
} call;

static inline void fail(call *c, const char *msg) {
  if (!c->failed) napi_throw_range_error(c->env, NULL, msg);
  c->failed = 1;
}

static inline call begin(napi_env env, napi_callback_info info, size_t want) {
  call c = {env, {0}, MAX_ARGS, 0};
  napi_get_cb_info(env, info, &c.argc, c.argv, NULL, NULL);
  if (c.argc < want) fail(&c, "meshtrain native: too few arguments");
  return c;
}

static inline void *typed(call *c, size_t i, napi_typedarray_type want, size_t minLen, size_t *lenOut) {
  if (c->failed) return NULL;
  napi_typedarray_type type;
  size_t len;
  void *data;
  napi_value ab;
  size_t off;
  if (napi_get_typedarray_info(c->env, c->argv[i], &type, &len, &data, &ab, &off) != napi_ok || type != want) {
    fail(c, "meshtrain native: argument is not the expected typed array");
    return NULL;
  }
  if (len < minLen) {
    fail(c, "meshtrain native: typed array shorter than the sizes given");
    return NULL;
  }
  if (lenOut) *lenOut = len;
  return data;
}

static inline float *f32(call *c, size_t i, size_t minLen) { return (float *)typed(c, i, napi_float32_array, minLen, NULL); }
static inline int32_t *i32(call *c, size_t i, size_t minLen) { return (int32_t *)typed(c, i, napi_int32_array, minLen, NULL); }

static inline double num(call *c, size_t i) {
  double v = 0;
  if (!c->failed && napi_get_value_double(c->env, c->argv[i], &v) != napi_ok) fail(c, "meshtrain native: expected a number");
  return v;
}

static inline int is_null(call *c, size_t i) {
  napi_valuetype t;
  napi_typeof(c->env, c->argv[i], &t);
  return t == napi_null || t == napi_undefined;
}

static inline napi_value undef(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

#endif
