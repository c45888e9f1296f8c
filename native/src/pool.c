#include <math.h>
#include <string.h>
#include "kernels.h"

/* Pooling over NHWC images. Ties and padding follow TF.js's cpu kernels: the first maximum in
 * window order wins, padding never counts, and the average gradient divides by the full window. */

#define GEOM                                                                                       \
  int N = p[P_BATCH], H = p[P_INH], W = p[P_INW], C = p[P_INC], OH = p[P_OUTH], OW = p[P_OUTW];     \
  int KH = p[P_KH], KW = p[P_KW], SH = p[P_SH], SW = p[P_SW], DH = p[P_DH], DW = p[P_DW];          \
  int PT = p[P_PT], PL = p[P_PL];

void mt_max_pool(const float *x, float *out, const int32_t *p) {
  GEOM
  for (int n = 0; n < N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        float *o = out + (((int64_t)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c++) o[c] = -INFINITY;
        for (int kh = 0; kh < KH; kh++) {
          int ih = oh * SH - PT + kh * DH;
          if (ih < 0 || ih >= H) continue;
          for (int kw = 0; kw < KW; kw++) {
            int iw = ow * SW - PL + kw * DW;
            if (iw < 0 || iw >= W) continue;
            const float *xi = x + (((int64_t)n * H + ih) * W + iw) * C;
            for (int c = 0; c < C; c++) o[c] = xi[c] > o[c] ? xi[c] : o[c];
          }
        }
      }
}

void mt_max_pool_grad(const float *dy, const float *x, float *dx, const int32_t *p) {
  GEOM
  memset(dx, 0, sizeof(float) * (int64_t)N * H * W * C);
  for (int n = 0; n < N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        const float *d = dy + (((int64_t)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c++) {
          float best = -INFINITY;
          int64_t at = -1;
          for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PT + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; kw++) {
              int iw = ow * SW - PL + kw * DW;
              if (iw < 0 || iw >= W) continue;
              int64_t idx = (((int64_t)n * H + ih) * W + iw) * C + c;
              if (x[idx] > best) {
                best = x[idx];
                at = idx;
              }
            }
          }
          if (at >= 0) dx[at] += d[c];
        }
      }
}

void mt_avg_pool(const float *x, float *out, const int32_t *p) {
  GEOM
  for (int n = 0; n < N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        float *o = out + (((int64_t)n * OH + oh) * OW + ow) * C;
        for (int c = 0; c < C; c++) {
          double s = 0.0;
          int count = 0;
          for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PT + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; kw++) {
              int iw = ow * SW - PL + kw * DW;
              if (iw < 0 || iw >= W) continue;
              s += x[(((int64_t)n * H + ih) * W + iw) * C + c];
              count++;
            }
          }
          o[c] = (float)(s / count);
        }
      }
}

void mt_avg_pool_grad(const float *dy, float *dx, const int32_t *p) {
  GEOM
  const float mult = (float)(1.0 / (KH * KW));
  memset(dx, 0, sizeof(float) * (int64_t)N * H * W * C);
  for (int n = 0; n < N; n++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        const float *d = dy + (((int64_t)n * OH + oh) * OW + ow) * C;
        for (int kh = 0; kh < KH; kh++) {
          int ih = oh * SH - PT + kh * DH;
          if (ih < 0 || ih >= H) continue;
          for (int kw = 0; kw < KW; kw++) {
            int iw = ow * SW - PL + kw * DW;
            if (iw < 0 || iw >= W) continue;
            float *xi = dx + (((int64_t)n * H + ih) * W + iw) * C;
            for (int c = 0; c < C; c++) xi[c] += d[c] * mult;
          }
        }
      }
}
