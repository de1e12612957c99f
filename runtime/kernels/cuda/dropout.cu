// Dropout with the counter-based mask of runtime/kernels/dropout_hash.h:
// element i is kept iff dropoutKeep(seed, i, threshold), scaled by
// 1 / (1 - ratio) in the element type - bit-identical to the CPU backend.
// bf16 / f16 elements are widened, multiplied in float and rounded once (the
// CPU backend's emulation). Each thread handles 4 consecutive elements
// (16-byte float / 2 x 16-byte double / 8-byte 16-bit accesses and one
// 4-byte mask store when aligned), grid-stride.
// Packed tokens (`rows`, a separate instantiation so the plain path is
// unchanged): element i of packed row i / width is hashed as element
// rows[i / width] * width + i % width, and is dropped (0, mask 0) when that
// row is negative - the CPU backend's packed dropout.
#include "kernels/cuda/common.cuh"
#include "kernels/dropout_hash.h"

namespace tcc::cuda {
namespace {
using namespace detail;

/// The type dropout computes in: the element type, float for 16-bit ones.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ Compute<T> widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return toFloat(v);
}

template <class T> __device__ __forceinline__ T narrow(Compute<T> v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return fromFloat<T>(v);
}

template <class T, bool VEC, bool PACKED>
__global__ void __launch_bounds__(256)
    dropoutKernel(const T *x, T *y, uint8_t *mask, int64_t n,
                  uint64_t seed, const int64_t *offset, uint32_t threshold,
                  Compute<T> scale, const int32_t *rows, int64_t width) {
  using C = Compute<T>;
  if (offset)
    seed = dropoutSeed(seed, static_cast<uint64_t>(*offset));
  const int64_t groups = (n + 3) / 4;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i0 = g * 4;
    bool keep[4];
    if constexpr (PACKED) {
      // Element i0 + u is column `col` of packed row `row`; one division per
      // group, then the column steps on (width may be below 4).
      int64_t row = i0 / width, col = i0 - row * width;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        keep[u] = false;
        if (i0 + u < n) {
          const int32_t r = rows[row];
          keep[u] = r >= 0 &&
                    dropoutKeep(seed,
                                static_cast<uint64_t>(int64_t(r) * width + col),
                                threshold);
        }
        if (++col == width) {
          col = 0;
          ++row;
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < 4; ++u)
        keep[u] = dropoutKeep(seed, static_cast<uint64_t>(i0 + u), threshold);
    }
    if (VEC && i0 + 4 <= n) {
      if constexpr (std::is_same_v<T, double>) {
        double v[4];
        double2 a = reinterpret_cast<const double2 *>(x + i0)[0];
        double2 b = reinterpret_cast<const double2 *>(x + i0)[1];
        v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
#pragma unroll
        for (int u = 0; u < 4; ++u)
          v[u] = keep[u] ? v[u] * scale : 0.0;
        reinterpret_cast<double2 *>(y + i0)[0] = make_double2(v[0], v[1]);
        reinterpret_cast<double2 *>(y + i0)[1] = make_double2(v[2], v[3]);
      } else {
        // float: one 16-byte access; 16-bit: one 8-byte access.
        float v[4];
        loadVec<4>(x + i0, v);
#pragma unroll
        for (int u = 0; u < 4; ++u)
          v[u] = keep[u] ? __fmul_rn(v[u], scale) : 0.f;
        storeVec<4>(y + i0, v);
      }
      if (mask)
        *reinterpret_cast<uchar4 *>(mask + i0) =
            make_uchar4(keep[0], keep[1], keep[2], keep[3]);
    } else {
      for (int u = 0; u < 4 && i0 + u < n; ++u) {
        C v = keep[u] ? widen(x[i0 + u]) * scale : C(0);
        y[i0 + u] = narrow<T>(v);
        if (mask)
          mask[i0 + u] = keep[u];
      }
    }
  }
}

template <class T>
Status launchDropout(const T *x, T *y, uint8_t *mask, int64_t n, double ratio,
                     uint64_t seed, const int64_t *offset, const int32_t *rows,
                     int64_t width, cudaStream_t stream) {
  if (n < 0 || !(ratio >= 0.0 && ratio < 1.0) || (rows && width <= 0))
    return invalid();
  if (n == 0)
    return 0;
  const uint32_t threshold = dropoutKeepThreshold(ratio);
  // The CPU kernel's scale: 1 / (1 - ratio) rounded to the compute type.
  const Compute<T> scale = static_cast<Compute<T>>(1.0 / (1.0 - ratio));
  const bool vec = aligned16(x) && aligned16(y) &&
                   (!mask || (reinterpret_cast<uintptr_t>(mask) & 3u) == 0);
  // Enough blocks to fill any sm_80/sm_90 part; the loop strides the rest.
  const int64_t groups = (n + 3) / 4;
  const unsigned blocks = static_cast<unsigned>(
      groups / 256 + 1 < 4096 ? groups / 256 + 1 : 4096);
  if (rows && vec)
    dropoutKernel<T, true, true><<<blocks, 256, 0, stream>>>(
        x, y, mask, n, seed, offset, threshold, scale, rows, width);
  else if (rows)
    dropoutKernel<T, false, true><<<blocks, 256, 0, stream>>>(
        x, y, mask, n, seed, offset, threshold, scale, rows, width);
  else if (vec)
    dropoutKernel<T, true, false><<<blocks, 256, 0, stream>>>(
        x, y, mask, n, seed, offset, threshold, scale, nullptr, 0);
  else
    dropoutKernel<T, false, false><<<blocks, 256, 0, stream>>>(
        x, y, mask, n, seed, offset, threshold, scale, nullptr, 0);
  return launched();
}

} // namespace

Status dropout(const float *x, float *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows, int64_t width) {
  return launchDropout(x, y, mask, n, ratio, seed, offset, rows, width,
                       stream);
}

Status dropout(const double *x, double *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows, int64_t width) {
  return launchDropout(x, y, mask, n, ratio, seed, offset, rows, width,
                       stream);
}

Status dropout(FloatType type, const void *x, void *y, uint8_t *mask,
               int64_t n, double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows, int64_t width) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return launchDropout<T>(static_cast<const T *>(x), static_cast<T *>(y),
                            mask, n, ratio, seed, offset, rows, width, stream);
  });
}

} // namespace tcc::cuda
