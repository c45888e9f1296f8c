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

/* Whether a direct kernel takes this pass (MT_PASS_FORWARD, _INPUT or _FILTER) of this geometry,
 * by what was measured against im2col + OpenBLAS's GEMM (its SkylakeX kernels) on one AVX-512
 * core, AMD EPYC (OPENBLAS_CORETYPE=SkylakeX node dist/bench/kernels/conv-rates.js ...). Multiples
 * of 16 output channels only. The forward pass and the input's gradient up to 128 channels on
 * rows of 8 or more pixels (a row's pixels share the filter's loads): 56 x 56 x 64 ran at 199
 * GFLOP/s against 92-111, 28 x 28 x 128 at 155 against 145; at 256 channels on 14 x 14 the GEMM
 * ran 175 against 125, and rows of 7 leave too few pixels to block. The input's gradient runs the
 * forward kernel, so at unit stride only. The filter's gradient up to 256 output channels (196
 * against 175 at 14 x 14 x 256; 144 against 190 at 7 x 7 x 512), and a first layer's 3 input
 * channels (69 against 62). A 1x1 without stride or padding is already one GEMM over the image. */
int mt_conv_direct(const int32_t *p, int pass) {
  geom g = read_geom(p);
  if (g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 && g.PL == 0) return 0;
  if (g.OC % 16 != 0 || g.OC == 0) return 0;
  if (pass == MT_PASS_FILTER) return g.OC <= 256;
  if (g.OW < 8 || g.OC > 128) return 0;
  return pass == MT_PASS_FORWARD || (g.C % 16 == 0 && g.C > 0 && g.C <= 128 && g.SH == 1 && g.SW == 1 && g.W >= 8);
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

/* Which part of the sums a pass computes: output channels [oc0, oc0 + 16 OCB) over input channels
 * [c0, c0 + cn). A pass after the first over the same outputs adds to what they hold. */
typedef struct {
  int oc0, c0, cn;
} span;

/* PIX consecutive output pixels of row oh from column ow, over window rows [kh0, kh1) and
 * columns [kw0, kw1): the taps inside the image for every one of the PIX pixels. */
INLINE void block_forward(const geom *g, const float *x, const float *f, float *o, int n, int oh, int ow, int kh0, int kh1,
                          int kw0, int kw1, span sp, const int OCB, const int PIX) {
  v16 acc[16][4];
  o += sp.oc0;
  for (int q = 0; q < PIX; q++)
    for (int b = 0; b < OCB; b++) acc[q][b] = sp.c0 == 0 ? (v16){0} : load16(o + (int64_t)q * g->OC + 16 * b);
  int64_t step = (int64_t)g->SW * g->C;
  /* Without dilation, over all input channels, a window row's taps read consecutive pixels and
   * the filter's rows for them are consecutive too: (kw, c) is one run. */
  int merged = g->DW == 1 && sp.cn == g->C;
  int runs = merged ? 1 : kw1 - kw0, run = merged ? (kw1 - kw0) * g->C : sp.cn;
  for (int kh = kh0; kh < kh1; kh++) {
    int ih = oh * g->SH - g->PT + kh * g->DH;
    for (int r = 0; r < runs; r++) {
      const float *fk = f + (((int64_t)kh * g->KW + kw0 + r) * g->C + sp.c0) * g->OC + sp.oc0;
      const float *xs = x + pixel_at(g, n, ih, ow * g->SW - g->PL + (kw0 + r) * g->DW) + sp.c0;
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

/* A pass over every output row: the columns whose windows stay inside the image in blocks of PIX
 * (then 4, 2, 1), the edge columns one at a time with their own window columns. Padding rows and
 * columns are never read. */
INLINE void pass_forward(const geom *g, const float *x, const float *f, float *out, int clo, int chi, span sp, const int OCB,
                         const int PIX) {
  for (int n = 0; n < g->N; n++)
    for (int oh = 0; oh < g->OH; oh++) {
      float *row = out + out_at(g, n, oh, 0, g->OC);
      int top = oh * g->SH - g->PT;
      int kh0 = tap_first(top, g->DH), kh1 = tap_end(top, g->DH, g->KH, g->H);
      for (int ow = 0; ow < g->OW; ow++) {
        if (ow == clo) {
          for (; ow + PIX <= chi; ow += PIX) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, sp, OCB, PIX);
          for (; ow + 4 <= chi; ow += 4) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, sp, OCB, 4);
          for (; ow + 2 <= chi; ow += 2) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, sp, OCB, 2);
          for (; ow < chi; ow++) block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, 0, g->KW, sp, OCB, 1);
          if (ow >= g->OW) break;
        }
        int left = ow * g->SW - g->PL;
        block_forward(g, x, f, row + (int64_t)ow * g->OC, n, oh, ow, kh0, kh1, tap_first(left, g->DW), tap_end(left, g->DW, g->KW, g->W), sp, OCB, 1);
      }
    }
}

/* Input channels a pass sums over: its filter rows for 64 output channels (9 x 128 x 64 floats
 * for a 3x3 window) stay in a core's L2 while every image streams past them. */
#define PASS_CHANNELS 128

/* The output channels in groups of 64 (then 48, 32 or 16), the input channels in passes of
 * PASS_CHANNELS: each pass keeps its group's sums in registers and reads its filter rows from
 * cache. */
static void forward_any(const geom *g, const float *x, const float *f, float *out) {
  int alo, ahi, blo, bhi;
  tap_range(g->PL, 0, g->DW, g->SW, g->W, g->OW, &alo, &ahi);
  tap_range(g->PL, g->KW - 1, g->DW, g->SW, g->W, g->OW, &blo, &bhi);
  int clo = alo > blo ? alo : blo, chi = ahi < bhi ? ahi : bhi;
  if (chi < clo) chi = clo;
  for (int oc0 = 0; oc0 < g->OC; oc0 += 64)
    for (int c0 = 0; c0 < g->C; c0 += PASS_CHANNELS) {
      span sp = {oc0, c0, g->C - c0 < PASS_CHANNELS ? g->C - c0 : PASS_CHANNELS};
      switch ((g->OC - oc0) / 16) {
        case 1: pass_forward(g, x, f, out, clo, chi, sp, 1, 8); break;
        case 2: pass_forward(g, x, f, out, clo, chi, sp, 2, 10); break;
        case 3: pass_forward(g, x, f, out, clo, chi, sp, 3, 8); break;
        default: pass_forward(g, x, f, out, clo, chi, sp, 4, 6); break;
      }
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
INLINE void filter_rows(const geom *g, const float *x, const float *dy, float *dw, int n, int kh, int kw, int c0, int oc0,
                        const int OCB, const int CB) {
  int rlo, rhi, clo, chi;
  tap_range(g->PT, kh, g->DH, g->SH, g->H, g->OH, &rlo, &rhi);
  tap_range(g->PL, kw, g->DW, g->SW, g->W, g->OW, &clo, &chi);
  float *rows = dw + (((int64_t)kh * g->KW + kw) * g->C + c0) * g->OC + oc0;
  v16 acc[16][4];
  for (int cc = 0; cc < CB; cc++)
    for (int b = 0; b < OCB; b++) acc[cc][b] = load16(rows + (int64_t)cc * g->OC + 16 * b);
  int64_t xstep = (int64_t)g->SW * g->C;
  for (int oh = rlo; oh < rhi; oh++) {
    int ih = oh * g->SH - g->PT + kh * g->DH;
    const float *xp = x + pixel_at(g, n, ih, clo * g->SW - g->PL + kw * g->DW) + c0;
    const float *d = dy + out_at(g, n, oh, clo, g->OC) + oc0;
    for (int ow = clo; ow < chi; ow++, xp += xstep, d += g->OC) {
      v16 dv[4];
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

/* Image n's part of the filter's gradient for channels [oc0, oc0 + 16 OCB). */
INLINE void filter_group(const geom *g, const float *x, const float *dy, float *dw, int n, int oc0, const int OCB, const int CB) {
  for (int kh = 0; kh < g->KH; kh++)
    for (int kw = 0; kw < g->KW; kw++) {
      int c0 = 0;
      for (; c0 + CB <= g->C; c0 += CB) filter_rows(g, x, dy, dw, n, kh, kw, c0, oc0, OCB, CB);
      /* The last channels (all of them in a first layer's 1 to 3) in one block, so its sums
       * still hide the multiply-add's latency. */
      for (; c0 + 4 <= g->C; c0 += 4) filter_rows(g, x, dy, dw, n, kh, kw, c0, oc0, OCB, 4);
      switch (g->C - c0) {
        case 1: filter_rows(g, x, dy, dw, n, kh, kw, c0, oc0, OCB, 1); break;
        case 2: filter_rows(g, x, dy, dw, n, kh, kw, c0, oc0, OCB, 2); break;
        case 3: filter_rows(g, x, dy, dw, n, kh, kw, c0, oc0, OCB, 3); break;
        default: break;
      }
    }
}

void mt_conv2d_direct_filter(const float *x, const float *dy, float *dw, const int32_t *p) {
  geom g = read_geom(p);
  memset(dw, 0, sizeof(float) * (size_t)(g.K * g.OC));
  for (int n = 0; n < g.N; n++) {
    int oc0 = 0;
    for (; oc0 + 64 <= g.OC; oc0 += 64) filter_group(&g, x, dy, dw, n, oc0, 4, 6);
    switch ((g.OC - oc0) / 16) {
      case 1: filter_group(&g, x, dy, dw, n, oc0, 1, 16); break;
      case 2: filter_group(&g, x, dy, dw, n, oc0, 2, 8); break;
      case 3: filter_group(&g, x, dy, dw, n, oc0, 3, 6); break;
      default: break;
    }
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
