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

/* One tap of an output pixel's window: its place in the window (kh, kw) and the input pixel it
 * reads (ih, iw). */
typedef struct {
  int kh, kw, ih, iw;
} window_tap;

/* Moves t to the first tap at or after (kh, kw), in window order, that falls inside the image;
 * 0 once past the window. */
static inline int tap_seek(const geom *g, int oh, int ow, window_tap *t) {
  for (; t->kh < g->KH; t->kh++, t->kw = 0) {
    t->ih = oh * g->SH - g->PT + t->kh * g->DH;
    if (t->ih < 0 || t->ih >= g->H) continue;
    for (; t->kw < g->KW; t->kw++) {
      t->iw = ow * g->SW - g->PL + t->kw * g->DW;
      if (t->iw >= 0 && t->iw < g->W) return 1;
    }
  }
  return 0;
}

/* Every tap of output pixel (oh, ow)'s window inside the image, in window order (kh, then kw):
 * the one walk over a window that every convolution and pooling kernel shares. Padding taps are
 * skipped. */
#define FOR_EACH_TAP(g, oh, ow, t) for (window_tap t = {0, 0, 0, 0}; tap_seek((g), (oh), (ow), &t); t.kw++)

/* Offset of input pixel (n, ih, iw) in an NHWC image batch, in elements. */
static inline int64_t pixel_at(const geom *g, int n, int ih, int iw) { return (((int64_t)n * g->H + ih) * g->W + iw) * g->C; }

/* Offset of output pixel (n, oh, ow) with `channels` channels, in elements. */
static inline int64_t out_at(const geom *g, int n, int oh, int ow, int channels) { return (((int64_t)n * g->OH + oh) * g->OW + ow) * channels; }

#endif
