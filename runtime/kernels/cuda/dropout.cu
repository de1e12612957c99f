// Dropout with the counter-based mask of include/tcc/Interp/DropoutHash.h:
// element i is kept iff dropoutKeep(seed, i, threshold), scaled by
// 1 / (1 - ratio) in the element type - bit-identical to the CPU backend.
// Each thread handles 4 consecutive elements (16-byte float / 2 x 16-byte
// double accesses and one 4-byte mask store when aligned), grid-stride.
#include "kernels/cuda/common.cuh"

#include "DropoutHash.h"

namespace tcc::cuda {
namespace {
using namespace detail;

template <class T, bool VEC>
__global__ void __launch_bounds__(256)
    dropoutKernel(const T *x, T *y, uint8_t *mask, int64_t n,
                  uint64_t seed, const int64_t *offset, uint32_t threshold,
                  T scale) {
  if (offset)
    seed = dropoutSeed(seed, static_cast<uint64_t>(*offset));
  const int64_t groups = (n + 3) / 4;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i0 = g * 4;
    bool keep[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      keep[u] = dropoutKeep(seed, static_cast<uint64_t>(i0 + u), threshold);
    if (VEC && i0 + 4 <= n) {
      T v[4];
      if constexpr (sizeof(T) == 4) {
        float4 t = *reinterpret_cast<const float4 *>(x + i0);
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
      } else {
        double2 a = reinterpret_cast<const double2 *>(x + i0)[0];
        double2 b = reinterpret_cast<const double2 *>(x + i0)[1];
        v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[u] = keep[u] ? v[u] * scale : T(0);
      if constexpr (sizeof(T) == 4) {
        *reinterpret_cast<float4 *>(y + i0) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
        reinterpret_cast<double2 *>(y + i0)[0] = make_double2(v[0], v[1]);
        reinterpret_cast<double2 *>(y + i0)[1] = make_double2(v[2], v[3]);
      }
      if (mask)
        *reinterpret_cast<uchar4 *>(mask + i0) =
            make_uchar4(keep[0], keep[1], keep[2], keep[3]);
    } else {
      for (int u = 0; u < 4 && i0 + u < n; ++u) {
        y[i0 + u] = keep[u] ? x[i0 + u] * scale : T(0);
        if (mask)
          mask[i0 + u] = keep[u];
      }
    }
  }
}

template <class T>
Status launchDropout(const T *x, T *y, uint8_t *mask, int64_t n, double ratio,
                     uint64_t seed, const int64_t *offset,
                     cudaStream_t stream) {
  if (n < 0 || !(ratio >= 0.0 && ratio < 1.0))
    return invalid();
  if (n == 0)
    return 0;
  const uint32_t threshold = dropoutKeepThreshold(ratio);
  const T scale = static_cast<T>(1.0 / (1.0 - ratio));
  const bool vec = aligned16(x) && aligned16(y) &&
                   (!mask || (reinterpret_cast<uintptr_t>(mask) & 3u) == 0);
  // Enough blocks to fill any sm_80/sm_90 part; the loop strides the rest.
  const int64_t groups = (n + 3) / 4;
  const unsigned blocks = static_cast<unsigned>(
      groups / 256 + 1 < 4096 ? groups / 256 + 1 : 4096);
  if (vec)
    dropoutKernel<T, true><<<blocks, 256, 0, stream>>>(x, y, mask, n, seed,
                                                       offset, threshold, scale);
  else
    dropoutKernel<T, false><<<blocks, 256, 0, stream>>>(
        x, y, mask, n, seed, offset, threshold, scale);
  return launched();
}

} // namespace

Status dropout(const float *x, float *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream) {
  return launchDropout(x, y, mask, n, ratio, seed, offset, stream);
}

Status dropout(const double *x, double *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream) {
  return launchDropout(x, y, mask, n, ratio, seed, offset, stream);
}

} // namespace tcc::cuda
