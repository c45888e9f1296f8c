#include "kernels.h"

/* The few OpenBLAS entry points used, declared here so no cblas.h path is needed. */
enum { CblasRowMajor = 101 };
enum { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(int order, int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);
void openblas_set_num_threads(int n);

static int budget = 1;
static int current = -1;

void mt_set_threads(int b) { budget = b < 1 ? 1 : b; }
int mt_get_threads(void) { return budget; }

static void threads_for(double flops) {
  int want = (budget > 1 && flops >= MT_PARALLEL_FLOPS) ? budget : 1;
  if (want != current) {
    openblas_set_num_threads(want);
    current = want;
  }
}

void mt_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(int64_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(int64_t)i * ldc + j];
    return;
  }
  threads_for(2.0 * M * N * K);
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}

/* out[b] = op(a[b]) x op(b[b]); a batch stride of 0 broadcasts that operand over the batch. */
void mt_batch_matmul(const float *a, const float *b, float *out, int batch, int aBatchStride, int bBatchStride,
                     int M, int N, int K, int transA, int transB) {
  int lda = transA ? M : K;
  int ldb = transB ? K : N;
  for (int i = 0; i < batch; i++) {
    mt_sgemm(transA, transB, M, N, K, 1.0f, a + (int64_t)i * aBatchStride, lda, b + (int64_t)i * bBatchStride, ldb,
             0.0f, out + (int64_t)i * M * N, N);
  }
}
