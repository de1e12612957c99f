// Batched GEMM on OpenBLAS: one cblas_sgemm per batch matrix. Batches in
// tcc graphs are few (heads x batch at most) and each GEMM is large enough
// for OpenBLAS's own threading, so looping here costs little.
#include "kernels/cpu/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>

namespace tcc::cpu {

void gemm(bool transA, bool transB, int64_t batch, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t strideA,
          const float *b, int64_t strideB, float beta, float *c,
          int64_t strideC) {
  if (m == 0 || n == 0)
    return;
  // Leading dims of the stored matrices; BLAS rejects 0 even when k == 0.
  blasint lda = static_cast<blasint>(std::max<int64_t>(1, transA ? m : k));
  blasint ldb = static_cast<blasint>(std::max<int64_t>(1, transB ? k : n));
  blasint ldc = static_cast<blasint>(n);
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha,
                a + i * strideA, lda, b + i * strideB, ldb, beta,
                c + i * strideC, ldc);
}

} // namespace tcc::cpu
