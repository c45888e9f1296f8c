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

#endif
