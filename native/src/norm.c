#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "step.h"

/* Batch and layer normalization, forward and backward, in two passes over the data each way.
 * Statistics accumulate in double (TF.js's moments are float32 ops; a double sum rounded once is
 * within float rounding of them); batch norm's forward sums blocks of rows in float first. Its
 * backward keeps double products: summed in float blocks, two-row batches' gradients (a
 * difference of near-equal terms) left TF.js's by more than 1e-4 (native-graph-property). The
 * backward passes are the closed forms of the gradients autodiff takes through tf.moments and
 * tf.batchNorm:
 *   dx = gamma invstd / N (N dy - sum(dy) - xhat sum(dy xhat)),  xhat = (x - mean) invstd. */

/* Rows summed in float before each block's sums are added in double: float adds run twice the
 * lanes of double ones, and a block of 32 rows rounds no worse than TF.js's float32 sums. */
#define BN_BLOCK 32

void mt_bn_forward(const float *x, float *y, int64_t rows, int C, const float *gamma, const float *beta, float eps,
                   float *mean, float *var, float *invstd) {
  double *s = (double *)calloc((size_t)C * 2, sizeof(double));
  float *blk = (float *)malloc(sizeof(float) * (size_t)C * 3);
  if (!s || !blk) {
    free(s);
    free(blk);
    return;
  }
  double *ss = s + C;
  float *b1 = blk, *b2 = blk + C, *shift = blk + 2 * C;
  /* One pass for both moments, each channel's values taken about its first row's value so the
   * sum of squares does not cancel: var = E[(x - K)^2] - E[x - K]^2. */
  for (int c = 0; c < C; c++) shift[c] = rows > 0 ? x[c] : 0.0f;
  for (int64_t r0 = 0; r0 < rows; r0 += BN_BLOCK) {
    int64_t r1 = r0 + BN_BLOCK < rows ? r0 + BN_BLOCK : rows;
    for (int c = 0; c < C; c++) b1[c] = 0.0f, b2[c] = 0.0f;
    for (int64_t r = r0; r < r1; r++) {
      const float *xr = x + r * C;
      for (int c = 0; c < C; c++) {
        float d = xr[c] - shift[c];
        b1[c] += d;
        b2[c] += d * d;
      }
    }
    for (int c = 0; c < C; c++) s[c] += b1[c], ss[c] += b2[c];
  }
  for (int c = 0; c < C; c++) {
    double m = rows > 0 ? s[c] / (double)rows : 0.0;
    double v = rows > 0 ? ss[c] / (double)rows - m * m : 0.0;
    mean[c] = (float)(shift[c] + m);
    var[c] = (float)(v > 0.0 ? v : 0.0);
    invstd[c] = (float)(1.0 / sqrt((double)var[c] + (double)eps));
  }
  free(blk);
  free(s);
  /* Per channel scale and shift, so the pass over the data is one multiply-add. */
  float *a = (float *)malloc(sizeof(float) * (size_t)C * 2);
  if (!a) return;
  float *b = a + C;
  for (int c = 0; c < C; c++) {
    a[c] = invstd[c] * (gamma ? gamma[c] : 1.0f);
    b[c] = (beta ? beta[c] : 0.0f) - mean[c] * a[c];
  }
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * C;
    float *yr = y + r * C;
    for (int c = 0; c < C; c++) yr[c] = xr[c] * a[c] + b[c];
  }
  free(a);
}

void mt_bn_backward(const float *dy, const float *x, int64_t rows, int C, const float *mean, const float *invstd,
                    const float *gamma, float *dx, int dxAdd, float *dgamma, float *dbeta, int pAdd) {
  double *sdy = (double *)calloc((size_t)C * 2, sizeof(double));
  if (!sdy) return;
  double *sdyx = sdy + C;
  for (int64_t r = 0; r < rows; r++) {
    const float *dr = dy + r * C, *xr = x + r * C;
    for (int c = 0; c < C; c++) {
      sdy[c] += dr[c];
      sdyx[c] += (double)dr[c] * ((double)xr[c] - mean[c]) * invstd[c];
    }
  }
  if (dgamma) for (int c = 0; c < C; c++) dgamma[c] = (pAdd ? dgamma[c] : 0.0f) + (float)sdyx[c];
  if (dbeta) for (int c = 0; c < C; c++) dbeta[c] = (pAdd ? dbeta[c] : 0.0f) + (float)sdy[c];
  if (dx && rows > 0) {
    float *k = (float *)malloc(sizeof(float) * (size_t)C * 3);
    if (!k) { free(sdy); return; }
    float *m1 = k + C, *m2 = k + 2 * C;
    /* dx = k dy - k mean(dy) - k xhat mean(dy xhat), k = gamma invstd */
    for (int c = 0; c < C; c++) {
      k[c] = (gamma ? gamma[c] : 1.0f) * invstd[c];
      m1[c] = (float)(sdy[c] / (double)rows);
      m2[c] = (float)(sdyx[c] / (double)rows);
    }
    for (int64_t r = 0; r < rows; r++) {
      const float *dr = dy + r * C, *xr = x + r * C;
      float *o = dx + r * C;
      for (int c = 0; c < C; c++) {
        float xhat = (xr[c] - mean[c]) * invstd[c];
        float v = k[c] * (dr[c] - m1[c] - xhat * m2[c]);
        o[c] = dxAdd ? o[c] + v : v;
      }
    }
    free(k);
  }
  free(sdy);
}

void mt_ln_forward(const float *x, float *y, int64_t rows, int cols, const float *gamma, const float *beta, float eps,
                   float *mean, float *invstd) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++) s += xr[c];
    float m = cols > 0 ? (float)(s / cols) : 0.0f;
    double ss = 0.0;
    for (int c = 0; c < cols; c++) {
      double d = (double)xr[c] - m;
      ss += d * d;
    }
    float is = (float)(1.0 / sqrt((cols > 0 ? ss / cols : 0.0) + (double)eps));
    mean[r] = m;
    invstd[r] = is;
    for (int c = 0; c < cols; c++) {
      float v = (xr[c] - m) * is;
      if (gamma) v *= gamma[c];
      if (beta) v += beta[c];
      yr[c] = v;
    }
  }
}

void mt_ln_backward(const float *dy, const float *x, int64_t rows, int cols, const float *mean, const float *invstd,
                    const float *gamma, float *dx, int dxAdd, float *dgamma, float *dbeta, int pAdd) {
  double *acc = (dgamma || dbeta) ? (double *)calloc((size_t)cols * 2, sizeof(double)) : NULL;
  for (int64_t r = 0; r < rows; r++) {
    const float *dr = dy + r * cols, *xr = x + r * cols;
    float m = mean[r], is = invstd[r];
    double sg = 0.0, sgx = 0.0;
    for (int c = 0; c < cols; c++) {
      float xhat = (xr[c] - m) * is;
      float g = dr[c] * (gamma ? gamma[c] : 1.0f);
      sg += g;
      sgx += (double)g * xhat;
      if (acc) {
        acc[c] += (double)dr[c] * xhat;
        acc[cols + c] += dr[c];
      }
    }
    if (dx && cols > 0) {
      float m1 = (float)(sg / cols), m2 = (float)(sgx / cols);
      float *o = dx + r * cols;
      for (int c = 0; c < cols; c++) {
        float xhat = (xr[c] - m) * is;
        float v = is * (dr[c] * (gamma ? gamma[c] : 1.0f) - m1 - xhat * m2);
        o[c] = dxAdd ? o[c] + v : v;
      }
    }
  }
  if (acc) {
    if (dgamma) for (int c = 0; c < cols; c++) dgamma[c] = (pAdd ? dgamma[c] : 0.0f) + (float)acc[c];
    if (dbeta) for (int c = 0; c < cols; c++) dbeta[c] = (pAdd ? dbeta[c] : 0.0f) + (float)acc[cols + c];
    free(acc);
  }
}
