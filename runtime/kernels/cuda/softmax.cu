// Softmax, log-softmax and their gradients over contiguous rows: one row
// group (common.cuh) per row, the max and exp-sum in one online pass, sums
// in double, elementwise math in float as runtime/kernels/cpu/softmax.cpp.
// Templated on the storage type T (float, bf16, f16): loads widen to float,
// stores round once.
#include "kernels/cuda/common.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;

template <class T, int TPR, int VEC, bool LOG>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    softmaxKernel(const T *x, T *y, int64_t rows, int64_t len) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool valid = pos.row < rows;
  const T *xr = x + (valid ? pos.row : 0) * len;
  MaxSum ms;
  if (valid)
    for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
      float v[VEC];
      loadVec<VEC>(xr + c, v);
#pragma unroll
      for (int u = 0; u < VEC; ++u)
        ms.add(v[u]);
    }
  groupMaxSum<TPR>(ms, scratch);
  if (!valid)
    return;
  T *yr = y + pos.row * len;
  const bool bad = ms.bad();
  const float m = ms.m;
  // softmax: e / total with total the float sum (CPU: float(sum));
  // log_softmax: x - m - float(log(sum)).
  const float total = static_cast<float>(ms.s);
  const float logSum = static_cast<float>(log(ms.s));
  for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
    float v[VEC];
    loadVec<VEC>(xr + c, v);
#pragma unroll
    for (int u = 0; u < VEC; ++u) {
      if (bad)
        v[u] = NAN;
      else if (LOG)
        v[u] = v[u] - m - logSum;
      else
        v[u] = expf(v[u] - m) / total;
    }
    storeVec<VEC>(yr + c, v);
  }
}

/// softmax_grad: dx = y * (dy - sum(dy * y)); log_softmax_grad:
/// dx = dy - exp(y) * sum(dy).
template <class T, int TPR, int VEC, bool LOG>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    softmaxGradKernel(const T *y, const T *dy, T *dx, int64_t rows,
                      int64_t len) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool valid = pos.row < rows;
  const int64_t base = (valid ? pos.row : 0) * len;
  double sum = 0;
  if (valid)
    for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
      float g[VEC];
      loadVec<VEC>(dy + base + c, g);
      if constexpr (LOG) {
#pragma unroll
        for (int u = 0; u < VEC; ++u)
          sum += g[u];
      } else {
        float p[VEC];
        loadVec<VEC>(y + base + c, p);
#pragma unroll
        for (int u = 0; u < VEC; ++u)
          sum += static_cast<double>(g[u]) * p[u];
      }
    }
  sum = groupSum<TPR>(sum, scratch);
  if (!valid)
    return;
  const float s = static_cast<float>(sum);
  for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
    float g[VEC], p[VEC], r[VEC];
    loadVec<VEC>(dy + base + c, g);
    loadVec<VEC>(y + base + c, p);
#pragma unroll
    for (int u = 0; u < VEC; ++u)
      r[u] = LOG ? __fsub_rn(g[u], __fmul_rn(expf(p[u]), s))
                 : __fmul_rn(p[u], __fsub_rn(g[u], s));
    storeVec<VEC>(dx + base + c, r);
  }
}

template <class T, bool LOG>
Status launchSoftmax(const T *x, T *y, int64_t rows, int64_t len,
                     cudaStream_t stream) {
  if (rows < 0 || len < 0)
    return invalid();
  if (rows == 0 || len == 0)
    return 0;
  constexpr int VW = kVecWidth<T>;
  bool vec = len % VW == 0 && aligned16(x) && aligned16(y);
  return dispatchRows<VW>(len, vec, [&](auto tpr, auto vw) {
    constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
    softmaxKernel<T, TPR, VEC, LOG>
        <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(x, y, rows,
                                                                    len);
    return launched();
  });
}

template <class T, bool LOG>
Status launchSoftmaxGrad(const T *y, const T *dy, T *dx, int64_t rows,
                         int64_t len, cudaStream_t stream) {
  if (rows < 0 || len < 0)
    return invalid();
  if (rows == 0 || len == 0)
    return 0;
  constexpr int VW = kVecWidth<T>;
  bool vec = len % VW == 0 && aligned16(y) && aligned16(dy) && aligned16(dx);
  return dispatchRows<VW>(len, vec, [&](auto tpr, auto vw) {
    constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
    softmaxGradKernel<T, TPR, VEC, LOG>
        <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(
            y, dy, dx, rows, len);
    return launched();
  });
}

template <bool LOG>
Status softmaxAny(FloatType type, const void *x, void *y, int64_t rows,
                  int64_t len, cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return launchSoftmax<T, LOG>(static_cast<const T *>(x), static_cast<T *>(y),
                                 rows, len, stream);
  });
}

template <bool LOG>
Status softmaxGradAny(FloatType type, const void *y, const void *dy, void *dx,
                      int64_t rows, int64_t len, cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return launchSoftmaxGrad<T, LOG>(static_cast<const T *>(y),
                                     static_cast<const T *>(dy),
                                     static_cast<T *>(dx), rows, len, stream);
  });
}

} // namespace

Status softmax_rows(const float *x, float *y, int64_t rows, int64_t len,
                    cudaStream_t stream) {
  return launchSoftmax<float, false>(x, y, rows, len, stream);
}

Status log_softmax_rows(const float *x, float *y, int64_t rows, int64_t len,
                        cudaStream_t stream) {
  return launchSoftmax<float, true>(x, y, rows, len, stream);
}

Status softmax_grad_rows(const float *y, const float *dy, float *dx,
                         int64_t rows, int64_t len, cudaStream_t stream) {
  return launchSoftmaxGrad<float, false>(y, dy, dx, rows, len, stream);
}

Status log_softmax_grad_rows(const float *y, const float *dy, float *dx,
                             int64_t rows, int64_t len, cudaStream_t stream) {
  return launchSoftmaxGrad<float, true>(y, dy, dx, rows, len, stream);
}

Status softmax_rows(FloatType type, const void *x, void *y, int64_t rows,
                    int64_t len, cudaStream_t stream) {
  return softmaxAny<false>(type, x, y, rows, len, stream);
}

Status log_softmax_rows(FloatType type, const void *x, void *y, int64_t rows,
                        int64_t len, cudaStream_t stream) {
  return softmaxAny<true>(type, x, y, rows, len, stream);
}

Status softmax_grad_rows(FloatType type, const void *y, const void *dy,
                         void *dx, int64_t rows, int64_t len,
                         cudaStream_t stream) {
  return softmaxGradAny<false>(type, y, dy, dx, rows, len, stream);
}

Status log_softmax_grad_rows(FloatType type, const void *y, const void *dy,
                             void *dx, int64_t rows, int64_t len,
                             cudaStream_t stream) {
  return softmaxGradAny<true>(type, y, dy, dx, rows, len, stream);
}

} // namespace tcc::cuda
