#include <string.h>
#include "geom.h"
/* Fused multiply-adds, as OpenBLAS's GEMM uses: a convolution's sums are not held to TF.js's
 * rounding op by op (only the optimizers are, see optim.c), and fusing doubles the rate. */
#pragma GCC optimize("fp-contract=fast")

/* Direct convolutions for layers of few channels (a CIFAR ResNet's 16 to 64), where im2col +
 * GEMM is slow: its GEMMs are 16 to 64 columns wide, too narrow for OpenBLAS's kernels (a 16 ->
 * 16 channel 3x3 convolution ran at 45-50 GFLOP/s where the same core multiplies square matrices
 * at 140). Output channels go in vectors of 16 floats (GCC's vector extensions: AVX-512
 * registers where the CPU has them, two AVX2 halves elsewhere); each kernel keeps a block of
 * sums in registers (several pixels' channels, or several filter rows) and streams the rest, and
 * is compiled once per number of channel vectors (1 or 2) so its loops unroll fully: up to 16
 * sums in registers, 9 loads to 8 multiply-adds. */

typedef float v16 __attribute__((vector_size(64)));

static inline v16 load16(const float *p) {
  v16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void store16(float *p, v16 v) { memcpy(p, &v, sizeof v); }
static inline v16 splat(float x) { return (v16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }

#define INLINE static inline __attribute__((always_inline))

/* Whether a direct kernel takes this geometry, by what was measured against im2col + GEMM on
 * one AVX-512 core: the forward pass and the filter's gradient for 16 or 32 output channels
 * (1.2-4x faster; at 64 the GEMM is wide enough to win), the input's gradient at unit stride
 * between layers of 16 or 32 channels (2.5x at 16; strided or wider, the GEMM won). A 1x1
 * without stride or padding is already one GEMM over the image. */
int mt_conv_direct(const int32_t *p, int forInput) {
  geom g = read_geom(p);
  if (g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 && g.PL == 0) return 0;
  if (g.OC % 16 != 0 || g.OC == 0 || g.OC > 32) return 0;
  return !forInput || (g.C % 16 == 0 && g.C > 0 && g.C <= 32 && g.SH == 1 && g.SW == 1);
}

/* The output rows (or columns) [lo, hi) whose tap k reads inside an input axis of `size`: start
 * = o * stride - pad + k * dil must lie in [0, size). */
static void tap_range(int pad, int k, int dil, int stride, int size, int outSize, int *lo, int *hi) {
  int off = k * dil - pad; /* start = o * stride + off */
  int l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int h = size - 1 - off < 0 ? 0 : (size - 1 - off) / stride + 1;
  *lo = l;
  *hi = h < outSize ? h : outSize;
  if (*hi < *lo) *hi = *lo;
}

/* ---- forward: PIX output pixels of one row x OCB channel vectors in registers ---- */

/* PIX consecutive output pixels of row oh from column ow, over window rows [kh0, kh1) and
 * columns [kw0, kw1): the taps inside the image for every one of the PIX pixels. */
INLINE void block_forward(const geom *g, const float *x, const float *f, float *o, int n, int oh, int ow, int kh0, int kh1,
                          int kw0, int kw1, const int OCB, const int PIX) {
  v16 acc[8][2];
  for (int q = 0; q < PIX; q++)
    for (int b = 0; b < OCB; b++) acc[q][b] = (v16){0};
  int64_t step = (int64_t)g->SW * g->C;
  /* Without dilation a window row's taps read consecutive pixels, and the filter's rows for them
   * are consecutive too: (kw, c) is one run. */
  int runs = g->DW == 1 ? 1 : kw1 - kw0, run = g->DW == 1 ? (kw1 - kw0) * g->C : g->C;
  for (int kh = kh0; kh < kh1; kh++) {
    int ih = oh * g->SH - g->PT + kh * g->DH;
    for (int r = 0; r < runs; r++) {
      const float *fk = f + ((int64_t)kh * g->KW + kw0 + r) * g->C * g->OC;
      const float *xs = x + pixel_at(g, n, ih, ow * g->SW - g->PL + (kw0 + r) * g->DW);
      for (int c = 0; c < run; c++, fk += g->OC) {
        for (int b = 0; b < OCB; b++) {
          v16 w = load16(fk + 16 * b);
          for (int q = 0; q < PIX; q++) acc[q][b] += splat(xs[q * step + c]) * w;
        }
      }
    }
  }
  for (int q = 0; q < PIX; q++)
    for (int b = 0; b < OCB; b++) store16(o + (int64_t)q * g->OC + 16 * b, acc[q][b]);
}

/* Each output row: the columns whose windows stay inside the image in blocks of PIX (then 4, 2,
 * 1), the edge columns one at a time with their own window columns. Padding rows and columns are
 * never read. */
INLINE void forward(const geom *g, const float *x, const float *f, float *out, const int OCB, const int PIX) {
  int alo, ahi, blo, bhi;
  tap_range(g->PL, 0, g->DW, g->SW, g->W, g->OW, &alo, &ahi);
  tap_range(g->PL, g->KW - 1, g->DW, g->SW, g->W, g->OW, &blo, &bhi);
  int clo = alo > blo ? alo : blo, chi = ahi < bhi ? ahi : bhi;
  if (chi < clo) chi = clo;
  for (int n = 0; n < g->N; n++) {
    for (int oh = 0; oh < g->OH; oh++) {
      int top = oh * g->SH - g->PT;
      int kh0 = tap_first(top, g->DH), kh1 = tap_end(top, g->DH, g->KH, g->H);
      float *row = out + out_at(g, n, oh, 0, g->OC);
      for (int ow = 0; ow < g->OW; ow++) {
        if (ow == clo) {
          for (; ow + PIX <= chi; ow += PIX) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, OCB, PIX);
          for (; ow + 4 <= chi; ow += 4) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, OCB, 4);
          for (; ow + 2 <= chi; ow += 2) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, OCB, 2);
          for (; ow < chi; ow++) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, OCB, 1);
          if (ow >= g->OW) break;
        }
        int left = ow * g->SW - g->PL;
        block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, tap_first(left, g->DW), tap_end(left, g->DW, g->KW, g->W), OCB, 1);
      }
    }
  }
}

static void forward_any(const geom *g, const float *x, const float *f, float *out) {
  switch (g->OC / 16) {
    case 1: forward(g, x, f, out, 1, 8); break;
    default: forward(g, x, f, out, 2, 8); break;
  }
}

void mt_conv2d_direct(const float *x, const float *f, float *out, const int32_t *p) {
  geom g = read_geom(p);
  forward_any(&g, x, f, out);
}

/* ---- the filter's gradient: CB filter rows x OCB channel vectors in registers ---- */

/* dW[kh, kw, c, :] += sum over image n's output pixels of x[tap's pixel, c] dy[pixel, :], for
 * input channels [c0, c0 + CB), over the output pixels whose tap (kh, kw) is inside the image.
 * One image at a time, so its x and dy stay in cache across the taps. */
INLINE void filter_rows(const geom *g, const float *x, const float *dy, float *dw, int n, int kh, int kw, int c0,
                        const int OCB, const int CB) {
  int rlo, rhi, clo, chi;
  tap_range(g->PT, kh, g->DH, g->SH, g->H, g->OH, &rlo, &rhi);
  tap_range(g->PL, kw, g->DW, g->SW, g->W, g->OW, &clo, &chi);
  float *rows = dw + (((int64_t)kh * g->KW + kw) * g->C + c0) * g->OC;
  v16 acc[16][2];
  for (int cc = 0; cc < CB; cc++)
    for (int b = 0; b < OCB; b++) acc[cc][b] = load16(rows + (int64_t)cc * g->OC + 16 * b);
  int64_t xstep = (int64_t)g->SW * g->C;
  for (int oh = rlo; oh < rhi; oh++) {
    int ih = oh * g->SH - g->PT + kh * g->DH;
    const float *xp = x + pixel_at(g, n, ih, clo * g->SW - g->PL + kw * g->DW) + c0;
    const float *d = dy + out_at(g, n, oh, clo, g->OC);
    for (int ow = clo; ow < chi; ow++, xp += xstep, d += g->OC) {
      v16 dv[2];
      for (int b = 0; b < OCB; b++) dv[b] = load16(d + 16 * b);
      for (int cc = 0; cc < CB; cc++) {
        v16 xv = splat(xp[cc]);
        for (int b = 0; b < OCB; b++) acc[cc][b] += xv * dv[b];
      }
    }
  }
  for (int cc = 0; cc < CB; cc++)
    for (int b = 0; b < OCB; b++) store16(rows + (int64_t)cc * g->OC + 16 * b, acc[cc][b]);
}

INLINE void filter_grad(const geom *g, const float *x, const float *dy, float *dw, const int OCB, const int CB) {
  memset(dw, 0, sizeof(float) * (size_t)(g->K * g->OC));
  for (int n = 0; n < g->N; n++)
    for (int kh = 0; kh < g->KH; kh++)
      for (int kw = 0; kw < g->KW; kw++) {
        int c0 = 0;
        for (; c0 + CB <= g->C; c0 += CB) filter_rows(g, x, dy, dw, n, kh, kw, c0, OCB, CB);
        for (; c0 < g->C; c0++) filter_rows(g, x, dy, dw, n, kh, kw, c0, OCB, 1);
      }
}

void mt_conv2d_direct_filter(const float *x, const float *dy, float *dw, const int32_t *p) {
  geom g = read_geom(p);
  switch (g.OC / 16) {
    case 1: filter_grad(&g, x, dy, dw, 1, 16); break;
    default: filter_grad(&g, x, dy, dw, 2, 8); break;
  }
}

/* ---- the input's gradient, at unit stride ---- */

/* dx is dy convolved (forward) with the filter turned half a circle and its channels swapped,
 * padded by the window's reach less the forward padding: the forward kernel computes it with
 * every sum in registers. The turned filter goes in wt (K x OC floats). */
void mt_conv2d_direct_input(const float *dy, const float *f, float *dx, const int32_t *p, float *wt) {
  geom g = read_geom(p);
  int64_t taps = (int64_t)g.KH * g.KW;
  for (int64_t t = 0; t < taps; t++)
    for (int c = 0; c < g.C; c++)
      for (int o = 0; o < g.OC; o++) wt[((taps - 1 - t) * g.OC + o) * g.C + c] = f[(t * g.C + c) * g.OC + o];
  geom t = g;
  t.H = g.OH, t.W = g.OW, t.C = g.OC;
  t.OH = g.H, t.OW = g.W, t.OC = g.C;
  t.PT = (g.KH - 1) * g.DH - g.PT, t.PL = (g.KW - 1) * g.DW - g.PL;
  t.rows = (int64_t)t.OH * t.OW;
  t.K = (int64_t)t.KH * t.KW * t.C;
  forward_any(&t, dy, wt, dx);
}
