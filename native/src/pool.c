#include <math.h>
#include <string.h>
#include "geom.h"

/* Pooling over NHWC images. Ties and padding follow TF.js's cpu kernels: the first maximum in
 * window order wins, padding never counts, and the average gradient divides by the full window. */

void mt_max_pool(const float *x, float *out, const int32_t *p) {
  geom g = read_geom(p);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        float *o = out + out_at(&g, n, oh, ow, g.C);
        for (int c = 0; c < g.C; c++) o[c] = -INFINITY;
        FOR_EACH_TAP(&g, oh, ow) {
          const float *xi = x + pixel_at(&g, n, ih, iw);
          for (int c = 0; c < g.C; c++) o[c] = xi[c] > o[c] ? xi[c] : o[c];
        }
      }
}

/* Channels whose window winners are tracked at once. */
#define POOL_BLOCK 256

void mt_max_pool_grad(const float *dy, const float *x, float *dx, const int32_t *p) {
  geom g = read_geom(p);
  memset(dx, 0, sizeof(float) * (int64_t)g.N * g.H * g.W * g.C);
  /* A block of channels' winners at once, channels innermost as they lie in memory (a walk per
   * channel strides through the image and ran several times slower). */
  float best[POOL_BLOCK];
  int64_t at[POOL_BLOCK];
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        const float *d = dy + out_at(&g, n, oh, ow, g.C);
        for (int c0 = 0; c0 < g.C; c0 += POOL_BLOCK) {
          int cn = g.C - c0 < POOL_BLOCK ? g.C - c0 : POOL_BLOCK;
          for (int c = 0; c < cn; c++) {
            best[c] = -INFINITY;
            at[c] = -1;
          }
          FOR_EACH_TAP(&g, oh, ow) {
            int64_t base = pixel_at(&g, n, ih, iw) + c0;
            const float *xi = x + base;
            for (int c = 0; c < cn; c++) {
              if (xi[c] > best[c]) {
                best[c] = xi[c];
                at[c] = base + c;
              }
            }
          }
          for (int c = 0; c < cn; c++)
            if (at[c] >= 0) dx[at[c]] += d[c0 + c];
        }
      }
}

void mt_avg_pool(const float *x, float *out, const int32_t *p) {
  geom g = read_geom(p);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        float *o = out + out_at(&g, n, oh, ow, g.C);
        for (int c = 0; c < g.C; c++) {
          double s = 0.0;
          int count = 0;
          FOR_EACH_TAP(&g, oh, ow) {
            s += x[pixel_at(&g, n, ih, iw) + c];
            count++;
          }
          o[c] = (float)(s / count);
        }
      }
}

void mt_avg_pool_grad(const float *dy, float *dx, const int32_t *p) {
  geom g = read_geom(p);
  const float mult = (float)(1.0 / (g.KH * g.KW));
  memset(dx, 0, sizeof(float) * (int64_t)g.N * g.H * g.W * g.C);
  for (int n = 0; n < g.N; n++)
    for (int oh = 0; oh < g.OH; oh++)
      for (int ow = 0; ow < g.OW; ow++) {
        const float *d = dy + out_at(&g, n, oh, ow, g.C);
        FOR_EACH_TAP(&g, oh, ow) {
          float *xi = dx + pixel_at(&g, n, ih, iw);
          for (int c = 0; c < g.C; c++) xi[c] += d[c] * mult;
        }
      }
}
