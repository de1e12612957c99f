// Fused softmax cross-entropy and its logits gradient over contiguous rows
// (runtime/kernels/cpu/loss.cpp): one row group per row finds the row's
// max and exp-sum in one online pass (sum in double), so the log-sum-exp
// costs one read of the row; the gradient recomputes it and writes
// softmax - onehot directly, never storing probabilities. The forward's
// loss sum is deterministic: per-row losses (double) go to the workspace
// and one block adds them in a fixed order. Logits and their gradient are
// stored as T (float, bf16, f16; widened on load, the gradient rounded once
// on store); the loss sum and count are always float.
#include "kernels/cuda/common.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;

/// log(sum(exp(row))) as the CPU kernel's logSumExp: NaN if the row has a
/// NaN, the maximum itself when it is infinite, else m + log(s).
__device__ __forceinline__ double logSumExp(const MaxSum &ms) {
  if (ms.nan)
    return NAN;
  if (ms.m == INFINITY || ms.m == -INFINITY)
    return ms.m;
  return double(ms.m) + log(ms.s);
}

template <int TPR, int VEC, class T>
__device__ __forceinline__ MaxSum rowMaxSum(const T *row, int64_t len,
                                            int t, bool valid,
                                            RowScratch<TPR> &scratch) {
  MaxSum ms;
  if (valid)
    for (int64_t c = int64_t(t) * VEC; c < len; c += TPR * VEC) {
      float v[VEC];
      loadVec<VEC>(row + c, v);
#pragma unroll
      for (int u = 0; u < VEC; ++u)
        ms.add(v[u]);
    }
  groupMaxSum<TPR>(ms, scratch);
  return ms;
}

template <class T, int TPR, int VEC, class L>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    crossEntropyRowKernel(const T *logits, const L *labels, int64_t rows,
                          int64_t classes, int64_t ignoreIndex,
                          double *rowLoss, int *rowCounted, int64_t *error) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool inRange = pos.row < rows;
  const int64_t label = inRange ? static_cast<int64_t>(labels[pos.row]) : 0;
  const bool ignored = label == ignoreIndex;
  const bool bad = !ignored && (label < 0 || label >= classes);
  // The whole group takes the same branch: the reductions stay collective.
  const bool valid = inRange && !ignored && !bad;
  const T *row = logits + (inRange ? pos.row : 0) * classes;
  MaxSum ms = rowMaxSum<TPR, VEC>(row, classes, pos.t, valid, scratch);
  if (!inRange || pos.t != 0)
    return;
  if (bad)
    recordError(error, pos.row);
  rowLoss[pos.row] =
      valid ? logSumExp(ms) - double(toFloat(row[label])) : 0.0;
  rowCounted[pos.row] = valid ? 1 : 0;
}

constexpr int kSumThreads = 1024;

/// lossSum and count over all rows: strided per-thread sums, then a fixed
/// tree over the block.
__global__ void __launch_bounds__(kSumThreads)
    crossEntropySumKernel(const double *rowLoss, const int *rowCounted,
                          int64_t rows, float *lossSum, float *count) {
  __shared__ double sLoss[kSumThreads];
  __shared__ long long sCount[kSumThreads];
  double s = 0;
  long long n = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kSumThreads) {
    s += rowLoss[r];
    n += rowCounted[r];
  }
  sLoss[threadIdx.x] = s;
  sCount[threadIdx.x] = n;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      sLoss[threadIdx.x] += sLoss[threadIdx.x + half];
      sCount[threadIdx.x] += sCount[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *lossSum = static_cast<float>(sLoss[0]);
    *count = static_cast<float>(sCount[0]);
  }
}

template <class T, int TPR, int VEC, class L>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    crossEntropyGradKernel(const T *logits, const L *labels,
                           FloatType seedType, const void *lossSumGrad,
                           T *dlogits, int64_t rows, int64_t classes,
                           int64_t ignoreIndex, int64_t *error) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool inRange = pos.row < rows;
  const int64_t label = inRange ? static_cast<int64_t>(labels[pos.row]) : 0;
  const bool ignored = label == ignoreIndex;
  const bool bad = !ignored && (label < 0 || label >= classes);
  const bool valid = inRange && !ignored && !bad;
  const int64_t base = (inRange ? pos.row : 0) * classes;
  MaxSum ms = rowMaxSum<TPR, VEC>(logits + base, classes, pos.t, valid, scratch);
  if (!inRange)
    return;
  if (bad && pos.t == 0)
    recordError(error, pos.row);
  const double lse = logSumExp(ms);
  const double g = loadAs(seedType, lossSumGrad, 0);
  for (int64_t c = int64_t(pos.t) * VEC; c < classes; c += TPR * VEC) {
    float v[VEC];
    if (valid) {
      loadVec<VEC>(logits + base + c, v);
#pragma unroll
      for (int u = 0; u < VEC; ++u) {
        // exp of the difference taken in double, rounded once to float.
        float pr = expf(static_cast<float>(double(v[u]) - lse));
        double onehot = c + u == label ? 1.0 : 0.0;
        v[u] = static_cast<float>((double(pr) - onehot) * g);
      }
    } else {
#pragma unroll
      for (int u = 0; u < VEC; ++u)
        v[u] = 0.f;
    }
    storeVec<VEC>(dlogits + base + c, v);
  }
}

struct FwdWorkspace {
  double *rowLoss;
  int *rowCounted;
  size_t bytes;
};

FwdWorkspace fwdWorkspace(void *base, int64_t rows) {
  size_t lossBytes = roundUp256(sizeof(double) * size_t(rows));
  char *p = static_cast<char *>(base);
  return {reinterpret_cast<double *>(p), reinterpret_cast<int *>(p + lossBytes),
          lossBytes + roundUp256(sizeof(int) * size_t(rows))};
}

template <class T, class L>
Status crossEntropyFwd(const T *logits, const L *labels, int64_t rows,
                       int64_t classes, int64_t ignoreIndex, float *lossSum,
                       float *count, void *workspace, int64_t *error,
                       cudaStream_t stream) {
  if (rows < 0 || classes < 0 || (rows > 0 && !workspace))
    return invalid();
  FwdWorkspace w = fwdWorkspace(workspace, rows);
  if (rows > 0) {
    constexpr int VW = kVecWidth<T>;
    bool vec = classes % VW == 0 && aligned16(logits);
    Status st = dispatchRows<VW>(classes, vec, [&](auto tpr, auto vw) {
      constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
      crossEntropyRowKernel<T, TPR, VEC, L>
          <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(
              logits, labels, rows, classes, ignoreIndex, w.rowLoss,
              w.rowCounted, error);
      return launched();
    });
    if (st)
      return st;
  }
  crossEntropySumKernel<<<1, kSumThreads, 0, stream>>>(
      w.rowLoss, w.rowCounted, rows, lossSum, count);
  return launched();
}

template <class T, class L>
Status crossEntropyGrad(const T *logits, const L *labels, FloatType seedType,
                        const void *lossSumGrad, T *dlogits, int64_t rows,
                        int64_t classes, int64_t ignoreIndex, int64_t *error,
                        cudaStream_t stream) {
  if (rows < 0 || classes < 0)
    return invalid();
  if (rows == 0 || classes == 0)
    return 0;
  constexpr int VW = kVecWidth<T>;
  bool vec = classes % VW == 0 && aligned16(logits) && aligned16(dlogits);
  return dispatchRows<VW>(classes, vec, [&](auto tpr, auto vw) {
    constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
    crossEntropyGradKernel<T, TPR, VEC, L>
        <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(
            logits, labels, seedType, lossSumGrad, dlogits, rows, classes,
            ignoreIndex, error);
    return launched();
  });
}

template <class L>
Status crossEntropyFwdAny(FloatType type, const void *logits, const L *labels,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          float *lossSum, float *count, void *workspace,
                          int64_t *error, cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return crossEntropyFwd<T, L>(static_cast<const T *>(logits), labels, rows,
                                 classes, ignoreIndex, lossSum, count,
                                 workspace, error, stream);
  });
}

template <class L>
Status crossEntropyGradAny(FloatType type, const void *logits, const L *labels,
                           FloatType seedType, const void *lossSumGrad,
                           void *dlogits, int64_t rows, int64_t classes,
                           int64_t ignoreIndex, int64_t *error,
                           cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return crossEntropyGrad<T, L>(static_cast<const T *>(logits), labels,
                                  seedType, lossSumGrad,
                                  static_cast<T *>(dlogits), rows, classes,
                                  ignoreIndex, error, stream);
  });
}

} // namespace

size_t cross_entropy_fwd_workspace_bytes(int64_t rows) {
  return rows <= 0 ? 0 : fwdWorkspace(nullptr, rows).bytes;
}

Status cross_entropy_fwd(const float *logits, const int64_t *labels,
                         int64_t rows, int64_t classes, int64_t ignoreIndex,
                         float *lossSum, float *count, void *workspace,
                         int64_t *error, cudaStream_t stream) {
  return crossEntropyFwd(logits, labels, rows, classes, ignoreIndex, lossSum,
                         count, workspace, error, stream);
}

Status cross_entropy_fwd(const float *logits, const int32_t *labels,
                         int64_t rows, int64_t classes, int64_t ignoreIndex,
                         float *lossSum, float *count, void *workspace,
                         int64_t *error, cudaStream_t stream) {
  return crossEntropyFwd(logits, labels, rows, classes, ignoreIndex, lossSum,
                         count, workspace, error, stream);
}

Status cross_entropy_grad(const float *logits, const int64_t *labels,
                          const float *lossSumGrad, float *dlogits,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          int64_t *error, cudaStream_t stream) {
  return crossEntropyGrad(logits, labels, FloatType::F32, lossSumGrad, dlogits,
                          rows, classes, ignoreIndex, error, stream);
}

Status cross_entropy_grad(const float *logits, const int32_t *labels,
                          const float *lossSumGrad, float *dlogits,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          int64_t *error, cudaStream_t stream) {
  return crossEntropyGrad(logits, labels, FloatType::F32, lossSumGrad, dlogits,
                          rows, classes, ignoreIndex, error, stream);
}

Status cross_entropy_fwd(FloatType type, const void *logits,
                         const int64_t *labels, int64_t rows, int64_t classes,
                         int64_t ignoreIndex, float *lossSum, float *count,
                         void *workspace, int64_t *error, cudaStream_t stream) {
  return crossEntropyFwdAny(type, logits, labels, rows, classes, ignoreIndex,
                            lossSum, count, workspace, error, stream);
}

Status cross_entropy_fwd(FloatType type, const void *logits,
                         const int32_t *labels, int64_t rows, int64_t classes,
                         int64_t ignoreIndex, float *lossSum, float *count,
                         void *workspace, int64_t *error, cudaStream_t stream) {
  return crossEntropyFwdAny(type, logits, labels, rows, classes, ignoreIndex,
                            lossSum, count, workspace, error, stream);
}

Status cross_entropy_grad(FloatType type, const void *logits,
                          const int64_t *labels, FloatType seedType,
                          const void *lossSumGrad, void *dlogits, int64_t rows,
                          int64_t classes, int64_t ignoreIndex, int64_t *error,
                          cudaStream_t stream) {
  return crossEntropyGradAny(type, logits, labels, seedType, lossSumGrad,
                             dlogits, rows, classes, ignoreIndex, error,
                             stream);
}

Status cross_entropy_grad(FloatType type, const void *logits,
                          const int32_t *labels, FloatType seedType,
                          const void *lossSumGrad, void *dlogits, int64_t rows,
                          int64_t classes, int64_t ignoreIndex, int64_t *error,
                          cudaStream_t stream) {
  return crossEntropyGradAny(type, logits, labels, seedType, lossSumGrad,
                             dlogits, rows, classes, ignoreIndex, error,
                             stream);
}

} // namespace tcc::cuda
