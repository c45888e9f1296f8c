#ifndef MESHTRAIN_GEOM_H
#define MESHTRAIN_GEOM_H
#include "kernels.h"

/* The window geometry every convolution and pooling kernel reads from its params array. */
typedef struct {
  int N, H, W, C, OH, OW, OC, KH, KW, SH, SW, DH, DW, PT, PL;
  int64_t rows; /* output pixels per image */
  int64_t K;    /* KH * KW * C */
} geom;

static inline geom read_geom(const int32_t *p) {
  geom g = {p[P_BATCH], p[P_INH], p[P_INW], p[P_INC], p[P_OUTH], p[P_OUTW], p[P_OUTC], p[P_KH], p[P_KW],
            p[P_SH], p[P_SW], p[P_DH], p[P_DW], p[P_PT], p[P_PL], 0, 0};
  g.rows = (int64_t)g.OH * g.OW;
  g.K = (int64_t)g.KH * g.KW * g.C;
  return g;
}

/* The first tap k (0 <= k) whose position start + k * step is inside [0, size), and one past the
 * last, for one axis of a window of `taps` taps. */
static inline int tap_first(int start, int step) { return start >= 0 ? 0 : (-start + step - 1) / step; }
static inline int tap_end(int start, int step, int taps, int size) {
  if (start > size - 1) return 0;
  int end = (size - 1 - start) / step + 1;
  return end < taps ? end : taps;
}

/* Every tap of output pixel (oh, ow)'s window that falls inside the image, in window order (kh,
 * then kw), with the input pixel it reads (ih, iw): the one walk over a window that every
 * convolution and pooling kernel shares. Padding taps are skipped by the loops' bounds, so the
 * body has no bounds checks. */
#define FOR_EACH_TAP(g, oh, ow)                                                                                 \
  for (int top_ = (oh) * (g)->SH - (g)->PT, kh = tap_first(top_, (g)->DH),                                      \
           khEnd_ = tap_end(top_, (g)->DH, (g)->KH, (g)->H), ih = top_ + kh * (g)->DH;                          \
       kh < khEnd_; kh++, ih += (g)->DH)                                                                         \
    for (int left_ = (ow) * (g)->SW - (g)->PL, kw = tap_first(left_, (g)->DW),                                  \
             kwEnd_ = tap_end(left_, (g)->DW, (g)->KW, (g)->W), iw = left_ + kw * (g)->DW;                      \
         kw < kwEnd_; kw++, iw += (g)->DW)

/* Offset of input pixel (n, ih, iw) in an NHWC image batch, in elements. */
static inline int64_t pixel_at(const geom *g, int n, int ih, int iw) { return (((int64_t)n * g->H + ih) * g->W + iw) * g->C; }

/* Offset of output pixel (n, oh, ow) with `channels` channels, in elements. */
static inline int64_t out_at(const geom *g, int n, int oh, int ow, int channels) { return (((int64_t)n * g->OH + oh) * g->OW + ow) * channels; }

#endif
