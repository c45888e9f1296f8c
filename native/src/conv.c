#include <string.h>
#include "geom.h"

/* 2-D convolution as im2col + GEMM, in blocks of images so the column buffer stays within the
 * scratch the caller lends. Column layout: one row per output pixel, (kh, kw, c) along the row,
 * which is the order of a flattened HWIO filter, so forward is col x filter. */

/* A 1x1 convolution with unit stride and no padding needs no columns: x already is col. */
static int is_pointwise(const geom *g) {
  return g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PT == 0 && g->PL == 0 && g->OH == g->H && g->OW == g->W;
}

/* The direct kernels (conv_direct.c) take the passes they are faster at, unless the GEMM would
 * have had more than one thread to itself: the direct kernels run on one. */
static int direct(const geom *g, const int32_t *p, int pass) {
  if (!mt_conv_direct(p, pass)) return 0;
  return mt_get_threads() == 1 || 2.0 * g->N * g->rows * g->K * g->OC < MT_PARALLEL_FLOPS;
}

static int images_per_block(const geom *g, int64_t scratchLen) {
  int64_t per = g->rows * g->K;
  int64_t b = per > 0 ? scratchLen / per : g->N;
  if (b < 1) b = 1;
  if (b > g->N) b = g->N;
  return (int)b;
}

static void im2col(const geom *g, const float *x, int n0, int count, float *col) {
  for (int n = 0; n < count; n++) {
    float *dst = col + (int64_t)n * g->rows * g->K;
    for (int oh = 0; oh < g->OH; oh++) {
      for (int ow = 0; ow < g->OW; ow++) {
        float *row = dst + ((int64_t)oh * g->OW + ow) * g->K;
        /* Taps in the padding stay zero; a window wholly inside the image has none. */
        int top = oh * g->SH - g->PT, left = ow * g->SW - g->PL;
        int inside = top >= 0 && top + (g->KH - 1) * g->DH < g->H && left >= 0 && left + (g->KW - 1) * g->DW < g->W;
        if (!inside) memset(row, 0, sizeof(float) * g->K);
        FOR_EACH_TAP(g, oh, ow) memcpy(row + ((int64_t)kh * g->KW + kw) * g->C, x + pixel_at(g, n0 + n, ih, iw), sizeof(float) * g->C);
      }
    }
  }
}

static void col2im_add(const geom *g, const float *col, int n0, int count, float *dx) {
  for (int n = 0; n < count; n++) {
    const float *src = col + (int64_t)n * g->rows * g->K;
    for (int oh = 0; oh < g->OH; oh++) {
      for (int ow = 0; ow < g->OW; ow++) {
        const float *row = src + ((int64_t)oh * g->OW + ow) * g->K;
        FOR_EACH_TAP(g, oh, ow) {
          const float *seg = row + ((int64_t)kh * g->KW + kw) * g->C;
          float *d = dx + pixel_at(g, n0 + n, ih, iw);
          for (int c = 0; c < g->C; c++) d[c] += seg[c];
        }
      }
    }
  }
}

void mt_conv2d(const float *x, const float *filter, float *out, const int32_t *p, float *scratch, int64_t scratchLen) {
  geom g = read_geom(p);
  if (is_pointwise(&g)) {
    mt_sgemm(0, 0, (int)(g.N * g.rows), g.OC, (int)g.K, 1.0f, x, (int)g.K, filter, g.OC, 0.0f, out, g.OC);
    return;
  }
  if (direct(&g, p, MT_PASS_FORWARD)) {
    mt_conv2d_direct(x, filter, out, p);
    return;
  }
  int B = images_per_block(&g, scratchLen);
  for (int n0 = 0; n0 < g.N; n0 += B) {
    int count = g.N - n0 < B ? g.N - n0 : B;
    im2col(&g, x, n0, count, scratch);
    mt_sgemm(0, 0, (int)(count * g.rows), g.OC, (int)g.K, 1.0f, scratch, (int)g.K, filter, g.OC, 0.0f,
             out + (int64_t)n0 * g.rows * g.OC, g.OC);
  }
}

void mt_conv2d_backprop_input(const float *dy, const float *filter, float *dx, const int32_t *p, float *scratch, int64_t scratchLen) {
  geom g = read_geom(p);
  if (is_pointwise(&g)) {
    mt_sgemm(0, 1, (int)(g.N * g.rows), (int)g.K, g.OC, 1.0f, dy, g.OC, filter, g.OC, 0.0f, dx, (int)g.K);
    return;
  }
  /* The direct kernel lays the filter out anew in the scratch: K x OC floats. */
  if (scratchLen >= g.K * g.OC && direct(&g, p, MT_PASS_INPUT)) {
    mt_conv2d_direct_input(dy, filter, dx, p, scratch);
    return;
  }
  memset(dx, 0, sizeof(float) * (int64_t)g.N * g.H * g.W * g.C);
  int B = images_per_block(&g, scratchLen);
  for (int n0 = 0; n0 < g.N; n0 += B) {
    int count = g.N - n0 < B ? g.N - n0 : B;
    mt_sgemm(0, 1, (int)(count * g.rows), (int)g.K, g.OC, 1.0f, dy + (int64_t)n0 * g.rows * g.OC, g.OC, filter, g.OC,
             0.0f, scratch, (int)g.K);
    col2im_add(&g, scratch, n0, count, dx);
  }
}

void mt_conv2d_backprop_filter(const float *x, const float *dy, float *dw, const int32_t *p, float *scratch, int64_t scratchLen) {
  geom g = read_geom(p);
  if (is_pointwise(&g)) {
    mt_sgemm(1, 0, (int)g.K, g.OC, (int)(g.N * g.rows), 1.0f, x, (int)g.K, dy, g.OC, 0.0f, dw, g.OC);
    return;
  }
  if (direct(&g, p, MT_PASS_FILTER)) {
    mt_conv2d_direct_filter(x, dy, dw, p);
    return;
  }
  int B = images_per_block(&g, scratchLen);
  for (int n0 = 0; n0 < g.N; n0 += B) {
    int count = g.N - n0 < B ? g.N - n0 : B;
    im2col(&g, x, n0, count, scratch);
    mt_sgemm(1, 0, (int)g.K, g.OC, (int)(count * g.rows), 1.0f, scratch, (int)g.K, dy + (int64_t)n0 * g.rows * g.OC,
             g.OC, n0 == 0 ? 0.0f : 1.0f, dw, g.OC);
  }
  if (g.N == 0) memset(dw, 0, sizeof(float) * g.K * g.OC);
}

/* Depthwise: each input channel c has `mult` filters; output channel c * mult + q. */
void mt_depthwise_conv2d(const float *x, const float *f, float *out, const int32_t *p, int mult) {
  geom g = read_geom(p);
  int OC = g.C * mult;
  memset(out, 0, sizeof(float) * (int64_t)g.N * g.rows * OC);
  for (int n = 0; n < g.N; n++) {
    for (int oh = 0; oh < g.OH; oh++) {
      for (int ow = 0; ow < g.OW; ow++) {
        float *o = out + out_at(&g, n, oh, ow, OC);
        FOR_EACH_TAP(&g, oh, ow) {
          const float *xi = x + pixel_at(&g, n, ih, iw);
          const float *fk = f + ((int64_t)kh * g.KW + kw) * OC;
          for (int c = 0; c < g.C; c++)
            for (int q = 0; q < mult; q++) o[c * mult + q] += xi[c] * fk[c * mult + q];
        }
      }
    }
  }
}

void mt_depthwise_backprop_input(const float *dy, const float *f, float *dx, const int32_t *p, int mult) {
  geom g = read_geom(p);
  int OC = g.C * mult;
  memset(dx, 0, sizeof(float) * (int64_t)g.N * g.H * g.W * g.C);
  for (int n = 0; n < g.N; n++) {
    for (int oh = 0; oh < g.OH; oh++) {
      for (int ow = 0; ow < g.OW; ow++) {
        const float *d = dy + out_at(&g, n, oh, ow, OC);
        FOR_EACH_TAP(&g, oh, ow) {
          float *xi = dx + pixel_at(&g, n, ih, iw);
          const float *fk = f + ((int64_t)kh * g.KW + kw) * OC;
          for (int c = 0; c < g.C; c++) {
            float s = 0.0f;
            for (int q = 0; q < mult; q++) s += d[c * mult + q] * fk[c * mult + q];
            xi[c] += s;
          }
        }
      }
    }
  }
}

void mt_depthwise_backprop_filter(const float *x, const float *dy, float *dw, const int32_t *p, int mult) {
  geom g = read_geom(p);
  int OC = g.C * mult;
  memset(dw, 0, sizeof(float) * (int64_t)g.KH * g.KW * OC);
  for (int n = 0; n < g.N; n++) {
    for (int oh = 0; oh < g.OH; oh++) {
      for (int ow = 0; ow < g.OW; ow++) {
        const float *d = dy + out_at(&g, n, oh, ow, OC);
        FOR_EACH_TAP(&g, oh, ow) {
          const float *xi = x + pixel_at(&g, n, ih, iw);
          float *fk = dw + ((int64_t)kh * g.KW + kw) * OC;
          for (int c = 0; c < g.C; c++)
            for (int q = 0; q < mult; q++) fk[c * mult + q] += xi[c] * d[c * mult + q];
        }
      }
    }
  }
}
