/* N-API bindings of the 16-bit codec (half.c): what the WebSocket ring, the parameter-server
 * pushes and error feedback call from JavaScript. Lengths are checked here, so a bug on the
 * JavaScript side is a RangeError, never a write past a buffer. */
#include "bindings.h"
#include "half.h"
#include "napi_call.h"

static int format(call *c, size_t i) {
  int fmt = (int)num(c, i);
  if (!c->failed && fmt != HALF_FP16 && fmt != HALF_BF16) fail(c, "meshtrain native: unknown 16-bit format");
  return fmt;
}

/* halfEncode(fmt, src: Float32Array, dst: Uint8Array of 2 * src.length bytes at least) */
static napi_value encode(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  int fmt = format(&c, 0);
  size_t n = 0, bn = 0;
  const float *src = (const float *)typed(&c, 1, napi_float32_array, 0, &n);
  unsigned char *dst = (unsigned char *)typed(&c, 2, napi_uint8_array, 0, &bn);
  if (!c.failed && bn < 2 * n) fail(&c, "meshtrain native: halfEncode's destination is shorter than 2 bytes per value");
  if (!c.failed) half_encode(fmt, src, dst, n);
  return undef(env);
}

/* halfDecode(fmt, src: Uint8Array, dst: Float32Array, dstOffset, mode): mode 0 stores, 1 adds,
 * 2 adds and rounds the sum (see half.h). */
static napi_value decode(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 5);
  int fmt = format(&c, 0);
  size_t bn = 0, dn = 0;
  const unsigned char *src = (const unsigned char *)typed(&c, 1, napi_uint8_array, 0, &bn);
  float *dst = (float *)typed(&c, 2, napi_float32_array, 0, &dn);
  size_t off = (size_t)num(&c, 3), n = bn / 2;
  int mode = (int)num(&c, 4);
  if (!c.failed && (off > dn || n > dn - off)) fail(&c, "meshtrain native: halfDecode beyond the destination");
  if (!c.failed && (mode < 0 || mode > 2)) fail(&c, "meshtrain native: halfDecode's mode is 0, 1 or 2");
  if (!c.failed) half_decode(fmt, src, dst + off, n, mode);
  return undef(env);
}

/* halfRound(fmt, x: Float32Array) */
static napi_value round_all(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 2);
  int fmt = format(&c, 0);
  size_t n = 0;
  float *x = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  if (!c.failed) half_round(fmt, x, n);
  return undef(env);
}

/* halfFeedback(fmt, g: Float32Array, r: Float32Array of the same length) */
static napi_value feedback(napi_env env, napi_callback_info info) {
  call c = begin(env, info, 3);
  int fmt = format(&c, 0);
  size_t n = 0, rn = 0;
  float *g = (float *)typed(&c, 1, napi_float32_array, 0, &n);
  float *r = (float *)typed(&c, 2, napi_float32_array, 0, &rn);
  if (!c.failed && rn != n) fail(&c, "meshtrain native: halfFeedback's residual differs in length from the gradient");
  if (!c.failed) half_feedback(fmt, g, r, n);
  return undef(env);
}

void mt_register_half(napi_env env, napi_value exports) {
  static const struct {
    const char *name;
    napi_callback fn;
  } fns[] = {{"halfEncode", encode}, {"halfDecode", decode}, {"halfRound", round_all}, {"halfFeedback", feedback}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_value f;
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].fn, NULL, &f);
    napi_set_named_property(env, exports, fns[i].name, f);
  }
}
