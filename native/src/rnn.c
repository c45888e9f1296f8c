#include <math.h>
#include <string.h>
#include "fastmath.h"
#include "kernels.h"
#include "step.h"

/* LSTM, GRU and SimpleRNN over whole sequences, as tfjs-layers' cells compute them (gates i, f,
 * c, o for the LSTM; z, r, h for the GRU, reset applied before the recurrent product). The input
 * projection of every step is one GEMM the caller makes (z = x W + b), as PyTorch's CPU RNNs do;
 * here only the recurrent product runs step by step, and the gates are fused into one pass per
 * step. The backward pass returns dL/d(pre-activations) for every step, from which the caller
 * takes dW, dU, db and dx as whole-sequence GEMMs. Layouts: [B, T, ...], row-major. */

static inline float gate(int act, float z) {
  switch (act) {
    case MT_A_RELU: return z < 0.0f ? 0.0f : z;
    case MT_A_SIGMOID: return mt_sigmoid(z);
    case MT_A_TANH: return mt_tanh(z);
    case MT_A_HARD_SIGMOID: {
      float v = 0.2f * z + 0.5f;
      return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    default: return z;
  }
}

/* The gate's slope from its output y. */
static inline float dgate(int act, float y) {
  switch (act) {
    case MT_A_RELU: return y > 0.0f ? 1.0f : 0.0f;
    case MT_A_SIGMOID: return y * (1.0f - y);
    case MT_A_TANH: return 1.0f - y * y;
    case MT_A_HARD_SIGMOID: return y > 0.0f && y < 1.0f ? 0.2f : 0.0f;
    default: return 1.0f;
  }
}

static inline int kept(const float *mask, int b, int T, int s) { return !mask || mask[(int64_t)b * T + s] != 0.0f; }

/* hp[:, s] = previous state x rmask; returns whether there is a previous state (else zeros). */
static int previous(float *hp, const float *h, const float *h0, const float *rmask, int B, int T, int H, int t, int s) {
  int64_t hs = (int64_t)T * H;
  int any = t > 0 || h0;
  for (int b = 0; b < B; b++) {
    const float *prev = t > 0 ? h + b * hs + (int64_t)(t - 1) * H : (h0 ? h0 + (int64_t)b * H : NULL);
    float *dst = hp + b * hs + (int64_t)s * H;
    const float *rm = rmask ? rmask + (int64_t)b * H : NULL;
    for (int j = 0; j < H; j++) dst[j] = prev ? (rm ? prev[j] * rm[j] : prev[j]) : 0.0f;
  }
  return any;
}

static inline const float *raw_prev(const float *h, const float *h0, int64_t hs, int b, int t, int H) {
  return t > 0 ? h + b * hs + (int64_t)(t - 1) * H : (h0 ? h0 + (int64_t)b * H : NULL);
}

/* dL/d(previous state) from dhp (through the recurrent product), plus dh itself where the step
 * was masked (the state passed through), into dh[:, t-1] or dh0. */
static void to_previous(float *dh, float *dh0, const float *dhp, const float *rmask, const float *mask, int B, int T,
                        int H, int t, int s) {
  if (t == 0 && !dh0) return;
  int64_t hs = (int64_t)T * H;
  for (int b = 0; b < B; b++) {
    const float *d = dhp + (int64_t)b * H;
    const float *rm = rmask ? rmask + (int64_t)b * H : NULL;
    const float *here = dh + b * hs + (int64_t)t * H;
    int keep = kept(mask, b, T, s);
    float *target = t > 0 ? dh + b * hs + (int64_t)(t - 1) * H : dh0 + (int64_t)b * H;
    for (int j = 0; j < H; j++) {
      float v = rm ? d[j] * rm[j] : d[j];
      if (!keep) v += here[j];
      target[j] = t > 0 ? target[j] + v : v;
    }
  }
}

void mt_lstm_forward(float *z, const float *U, float *h, float *c, float *hp, const float *mask, const float *rmask,
                     const float *h0, const float *c0, int B, int T, int H, int reverse, int act, int ract) {
  int G = 4 * H;
  int64_t zs = (int64_t)T * G, hs = (int64_t)T * H;
  for (int t = 0; t < T; t++) {
    int s = reverse ? T - 1 - t : t;
    if (previous(hp, h, h0, rmask, B, T, H, t, s)) mt_sgemm(0, 0, B, G, H, 1.0f, hp + (int64_t)s * H, (int)hs, U, G, 1.0f, z + (int64_t)s * G, (int)zs);
    for (int b = 0; b < B; b++) {
      float *zr = z + b * zs + (int64_t)s * G;
      const float *cprev = t > 0 ? c + b * hs + (int64_t)(t - 1) * H : (c0 ? c0 + (int64_t)b * H : NULL);
      const float *hprev = raw_prev(h, h0, hs, b, t, H);
      float *hr = h + b * hs + (int64_t)t * H, *cr = c + b * hs + (int64_t)t * H;
      int keep = kept(mask, b, T, s);
      for (int j = 0; j < H; j++) {
        float i = gate(ract, zr[j]), f = gate(ract, zr[H + j]), g = gate(act, zr[2 * H + j]), o = gate(ract, zr[3 * H + j]);
        zr[j] = i;
        zr[H + j] = f;
        zr[2 * H + j] = g;
        zr[3 * H + j] = o;
        float cp = cprev ? cprev[j] : 0.0f;
        if (keep) {
          float cn = f * cp + i * g;
          cr[j] = cn;
          hr[j] = o * gate(act, cn);
        } else {
          cr[j] = cp;
          hr[j] = hprev ? hprev[j] : 0.0f;
        }
      }
    }
  }
}

void mt_lstm_backward(const float *z, const float *c, const float *h, float *dh, const float *dcT, float *dz,
                      const float *U, const float *mask, const float *rmask, const float *c0, float *dh0, float *dc0,
                      float *work, int B, int T, int H, int reverse, int act, int ract) {
  (void)h;
  int G = 4 * H;
  int64_t zs = (int64_t)T * G, hs = (int64_t)T * H;
  float *dc = work, *dhp = work + (int64_t)B * H;
  if (dcT) memcpy(dc, dcT, sizeof(float) * (size_t)B * H);
  else memset(dc, 0, sizeof(float) * (size_t)B * H);
  for (int t = T - 1; t >= 0; t--) {
    int s = reverse ? T - 1 - t : t;
    for (int b = 0; b < B; b++) {
      const float *zr = z + b * zs + (int64_t)s * G;
      float *dzr = dz + b * zs + (int64_t)s * G;
      if (!kept(mask, b, T, s)) {
        memset(dzr, 0, sizeof(float) * (size_t)G);
        continue;
      }
      const float *cr = c + b * hs + (int64_t)t * H;
      const float *cprev = t > 0 ? c + b * hs + (int64_t)(t - 1) * H : (c0 ? c0 + (int64_t)b * H : NULL);
      const float *dhr = dh + b * hs + (int64_t)t * H;
      float *dcb = dc + (int64_t)b * H;
      for (int j = 0; j < H; j++) {
        float i = zr[j], f = zr[H + j], g = zr[2 * H + j], o = zr[3 * H + j];
        float tc = gate(act, cr[j]);
        float dhj = dhr[j];
        float dcj = dcb[j] + dhj * o * dgate(act, tc);
        dzr[j] = dcj * g * dgate(ract, i);
        dzr[H + j] = dcj * (cprev ? cprev[j] : 0.0f) * dgate(ract, f);
        dzr[2 * H + j] = dcj * i * dgate(act, g);
        dzr[3 * H + j] = dhj * tc * dgate(ract, o);
        dcb[j] = dcj * f;
      }
    }
    if (t > 0 || dh0) {
      mt_sgemm(0, 1, B, H, G, 1.0f, dz + (int64_t)s * G, (int)zs, U, G, 0.0f, dhp, H);
      to_previous(dh, dh0, dhp, rmask, mask, B, T, H, t, s);
    }
  }
  if (dc0) memcpy(dc0, dc, sizeof(float) * (size_t)B * H);
}

void mt_gru_forward(float *z, const float *U, float *h, float *hp, float *rh, const float *mask, const float *rmask,
                    const float *h0, int B, int T, int H, int reverse, int act, int ract) {
  int G = 3 * H;
  int64_t zs = (int64_t)T * G, hs = (int64_t)T * H;
  for (int t = 0; t < T; t++) {
    int s = reverse ? T - 1 - t : t;
    int any = previous(hp, h, h0, rmask, B, T, H, t, s);
    if (any) mt_sgemm(0, 0, B, 2 * H, H, 1.0f, hp + (int64_t)s * H, (int)hs, U, G, 1.0f, z + (int64_t)s * G, (int)zs);
    for (int b = 0; b < B; b++) {
      float *zr = z + b * zs + (int64_t)s * G;
      const float *hpr = hp + b * hs + (int64_t)s * H;
      float *rhr = rh + b * hs + (int64_t)s * H;
      for (int j = 0; j < H; j++) {
        float zg = gate(ract, zr[j]), r = gate(ract, zr[H + j]);
        zr[j] = zg;
        zr[H + j] = r;
        rhr[j] = r * hpr[j];
      }
    }
    if (any) mt_sgemm(0, 0, B, H, H, 1.0f, rh + (int64_t)s * H, (int)hs, U + 2 * H, G, 1.0f, z + (int64_t)s * G + 2 * H, (int)zs);
    for (int b = 0; b < B; b++) {
      float *zr = z + b * zs + (int64_t)s * G;
      const float *hpr = hp + b * hs + (int64_t)s * H;
      const float *hprev = raw_prev(h, h0, hs, b, t, H);
      float *hr = h + b * hs + (int64_t)t * H;
      int keep = kept(mask, b, T, s);
      for (int j = 0; j < H; j++) {
        float hh = gate(act, zr[2 * H + j]);
        zr[2 * H + j] = hh;
        float zg = zr[j];
        hr[j] = keep ? zg * hpr[j] + (1.0f - zg) * hh : (hprev ? hprev[j] : 0.0f);
      }
    }
  }
}

void mt_gru_backward(const float *z, const float *h, const float *hp, float *dh, float *dz, const float *U,
                     const float *mask, const float *rmask, float *dh0, float *work, int B, int T, int H, int reverse,
                     int act, int ract) {
  (void)h;
  int G = 3 * H;
  int64_t zs = (int64_t)T * G, hs = (int64_t)T * H;
  float *dhp = work, *drh = work + (int64_t)B * H;
  for (int t = T - 1; t >= 0; t--) {
    int s = reverse ? T - 1 - t : t;
    for (int b = 0; b < B; b++) {
      const float *zr = z + b * zs + (int64_t)s * G;
      float *dzr = dz + b * zs + (int64_t)s * G;
      float *dp = dhp + (int64_t)b * H;
      if (!kept(mask, b, T, s)) {
        memset(dzr, 0, sizeof(float) * (size_t)G);
        memset(dp, 0, sizeof(float) * (size_t)H);
        continue;
      }
      const float *hpr = hp + b * hs + (int64_t)s * H;
      const float *dhr = dh + b * hs + (int64_t)t * H;
      for (int j = 0; j < H; j++) {
        float zg = zr[j], hh = zr[2 * H + j], dhj = dhr[j];
        dzr[j] = dhj * (hpr[j] - hh) * dgate(ract, zg);
        dzr[2 * H + j] = dhj * (1.0f - zg) * dgate(act, hh);
        dp[j] = dhj * zg;
      }
    }
    mt_sgemm(0, 1, B, H, H, 1.0f, dz + (int64_t)s * G + 2 * H, (int)zs, U + 2 * H, G, 0.0f, drh, H);
    for (int b = 0; b < B; b++) {
      const float *zr = z + b * zs + (int64_t)s * G;
      float *dzr = dz + b * zs + (int64_t)s * G;
      const float *hpr = hp + b * hs + (int64_t)s * H;
      const float *dr = drh + (int64_t)b * H;
      float *dp = dhp + (int64_t)b * H;
      int keep = kept(mask, b, T, s);
      for (int j = 0; j < H; j++) {
        float r = zr[H + j];
        dzr[H + j] = keep ? dr[j] * hpr[j] * dgate(ract, r) : 0.0f;
        if (keep) dp[j] += dr[j] * r;
      }
    }
    if (t > 0 || dh0) {
      mt_sgemm(0, 1, B, H, 2 * H, 1.0f, dz + (int64_t)s * G, (int)zs, U, G, 1.0f, dhp, H);
      to_previous(dh, dh0, dhp, rmask, mask, B, T, H, t, s);
    }
  }
}

void mt_rnn_forward(float *z, const float *U, float *h, float *hp, const float *mask, const float *rmask,
                    const float *h0, int B, int T, int H, int reverse, int act) {
  int64_t zs = (int64_t)T * H, hs = zs;
  for (int t = 0; t < T; t++) {
    int s = reverse ? T - 1 - t : t;
    if (previous(hp, h, h0, rmask, B, T, H, t, s)) mt_sgemm(0, 0, B, H, H, 1.0f, hp + (int64_t)s * H, (int)hs, U, H, 1.0f, z + (int64_t)s * H, (int)zs);
    for (int b = 0; b < B; b++) {
      float *zr = z + b * zs + (int64_t)s * H;
      const float *hprev = raw_prev(h, h0, hs, b, t, H);
      float *hr = h + b * hs + (int64_t)t * H;
      int keep = kept(mask, b, T, s);
      for (int j = 0; j < H; j++) {
        float y = gate(act, zr[j]);
        zr[j] = y;
        hr[j] = keep ? y : (hprev ? hprev[j] : 0.0f);
      }
    }
  }
}

void mt_rnn_backward(const float *z, const float *h, float *dh, float *dz, const float *U, const float *mask,
                     const float *rmask, float *dh0, float *work, int B, int T, int H, int reverse, int act) {
  (void)h;
  int64_t zs = (int64_t)T * H, hs = zs;
  float *dhp = work;
  for (int t = T - 1; t >= 0; t--) {
    int s = reverse ? T - 1 - t : t;
    for (int b = 0; b < B; b++) {
      const float *zr = z + b * zs + (int64_t)s * H;
      float *dzr = dz + b * zs + (int64_t)s * H;
      const float *dhr = dh + b * hs + (int64_t)t * H;
      int keep = kept(mask, b, T, s);
      for (int j = 0; j < H; j++) dzr[j] = keep ? dhr[j] * dgate(act, zr[j]) : 0.0f;
    }
    if (t > 0 || dh0) {
      mt_sgemm(0, 1, B, H, H, 1.0f, dz + (int64_t)s * H, (int)zs, U, H, 0.0f, dhp, H);
      to_previous(dh, dh0, dhp, rmask, mask, B, T, H, t, s);
    }
  }
}

void mt_gemm_batched(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda, int64_t aOuter,
                     int64_t aInner, const float *B, int ldb, int64_t bOuter, int64_t bInner, float beta, float *C,
                     int ldc, int64_t cOuter, int64_t cInner, int outer, int inner) {
  for (int o = 0; o < outer; o++)
    for (int i = 0; i < inner; i++)
      mt_sgemm(transA, transB, M, N, K, alpha, A + o * aOuter + i * aInner, lda, B + o * bOuter + i * bInner, ldb, beta,
               C + o * cOuter + i * cInner, ldc);
}
