// Batched GEMM on OpenBLAS: one cblas_sgemm per batch matrix. When OpenBLAS
// runs on one thread (OPENBLAS_NUM_THREADS=1, or a build without threads)
// the work is split over the worker pool (parallel.h) instead: the batch
// matrices, or for one matrix its rows of C, each range computed by one
// sgemm call. The split depends only on the shape and the thread count, so
// results are deterministic run to run.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace tcc::cpu {

namespace {

/// The OpenBLAS kernels this CPU's features allow, or null.
const char *featureCore() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return nullptr;
}

std::string chooseKernels() {
  if (std::getenv("OPENBLAS_CORETYPE"))
    return ""; // the user's choice
  const char *detected = openblas_get_corename();
  const char *core = featureCore();
  if (!detected || std::strcmp(detected, "Prescott") != 0 || !core)
    return "";
  using Fn = void (*)();
  auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!quit || !init)
    return ""; // not a DYNAMIC_ARCH OpenBLAS
  setenv("OPENBLAS_CORETYPE", core, 1);
  quit();
  init(); // reads OPENBLAS_CORETYPE
  unsetenv("OPENBLAS_CORETYPE");
  const char *now = openblas_get_corename();
  return std::string("OpenBLAS: ") + (now ? now : "?") +
         " kernels (it detected its generic 'Prescott' on this CPU, whose "
         "features allow " + core + "; OPENBLAS_CORETYPE overrides)\n";
}

} // namespace

const std::string &selectBlasKernels() {
  static std::once_flag once;
  static std::string note;
  std::call_once(once, [] { note = chooseKernels(); });
  return note;
}

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
  // C rows [r0, r1) of batch matrix i.
  auto rows = [&](int64_t i, int64_t r0, int64_t r1) {
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(r1 - r0), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha,
                a + i * strideA + (transA ? r0 : r0 * lda), lda,
                b + i * strideB, ldb, beta, c + i * strideC + r0 * ldc, ldc);
  };
  // Below ~1 MFLOP, a wake-up costs more than it saves.
  const int64_t flops = 2 * m * n * std::max<int64_t>(k, 1) * batch;
  const bool split = openblas_get_num_threads() == 1 && flops >= (1 << 20);
  if (!split) {
    for (int64_t i = 0; i < batch; ++i)
      rows(i, 0, m);
    return;
  }
  if (batch > 1) {
    parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        rows(i, 0, m);
    });
    return;
  }
  // Row blocks of at least 32 (OpenBLAS's kernels work on blocks of rows),
  // each at least ~512 KFLOP.
  int64_t minRows = std::max<int64_t>(32, ((int64_t(1) << 19) + 2 * n * k - 1) /
                                              std::max<int64_t>(1, 2 * n * k));
  parallel_for(m, minRows, [&](int64_t r0, int64_t r1) { rows(0, r0, r1); });
}

void gemm_row_sums(bool transA, int64_t m, int64_t k, const float *a,
                   float *sums) {
  // Blocks of outputs; within one, j outer so a transposed A is read in
  // rows (its m sums side by side).
  parallel_for(m, 64, [&](int64_t i0, int64_t i1) {
    std::vector<double> acc(size_t(i1 - i0), 0.0);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = i0; i < i1; ++i)
        acc[size_t(i - i0)] += transA ? a[j * m + i] : a[i * k + j];
    for (int64_t i = i0; i < i1; ++i)
      sums[i] = static_cast<float>(acc[size_t(i - i0)]);
  });
}

} // namespace tcc::cpu
