#include <math.h>
#include <stdlib.h>
#include "kernels.h"

/* Reductions over the middle axis of a [outer, reduce, inner] view. Sums accumulate in double,
 * as TF.js's cpu kernels do (JavaScript numbers), then round once to float32. */
void mt_reduce(int op, const float *x, float *out, int64_t outer, int64_t reduce, int64_t inner) {
  if (inner == 1) {
    for (int64_t o = 0; o < outer; o++) {
      const float *row = x + o * reduce;
      if (op == MT_RSUM || op == MT_RMEAN) {
        double s = 0.0;
        for (int64_t r = 0; r < reduce; r++) s += row[r];
        out[o] = op == MT_RSUM ? (float)s : (float)s / (float)reduce;
      } else {
        float m = reduce > 0 ? row[0] : (op == MT_RMAX ? -INFINITY : INFINITY);
        for (int64_t r = 1; r < reduce; r++) {
          float v = row[r];
          if (v != v || (op == MT_RMAX ? v > m : v < m)) m = v;
        }
        out[o] = m;
      }
    }
    return;
  }
  double *acc = (op == MT_RSUM || op == MT_RMEAN) ? (double *)malloc(sizeof(double) * inner) : NULL;
  for (int64_t o = 0; o < outer; o++) {
    const float *block = x + o * reduce * inner;
    float *dst = out + o * inner;
    if (acc) {
      for (int64_t i = 0; i < inner; i++) acc[i] = 0.0;
      for (int64_t r = 0; r < reduce; r++) {
        const float *row = block + r * inner;
        for (int64_t i = 0; i < inner; i++) acc[i] += row[i];
      }
      for (int64_t i = 0; i < inner; i++) dst[i] = op == MT_RSUM ? (float)acc[i] : (float)acc[i] / (float)reduce;
    } else {
      for (int64_t i = 0; i < inner; i++) dst[i] = reduce > 0 ? block[i] : (op == MT_RMAX ? -INFINITY : INFINITY);
      for (int64_t r = 1; r < reduce; r++) {
        const float *row = block + r * inner;
        for (int64_t i = 0; i < inner; i++) {
          float v = row[i];
          if (v != v || (op == MT_RMAX ? v > dst[i] : v < dst[i])) dst[i] = v;
        }
      }
    }
  }
  free(acc);
}

/* Softmax over the last axis, in the steps TF.js's cpu kernel takes (max, exp of the
 * difference, double sum rounded to float, division). */
void mt_softmax(const float *logits, float *out, int64_t rows, int cols) {
  for (int64_t r = 0; r < rows; r++) {
    const float *x = logits + r * cols;
    float *y = out + r * cols;
    float m = cols > 0 ? x[0] : 0.0f;
    for (int c = 1; c < cols; c++) if (x[c] != x[c] || x[c] > m) m = x[c];
    double s = 0.0;
    for (int c = 0; c < cols; c++) {
      y[c] = (float)exp((double)(x[c] - m));
      s += y[c];
    }
    float sf = (float)s;
    for (int c = 0; c < cols; c++) y[c] = y[c] / sf;
  }
}
