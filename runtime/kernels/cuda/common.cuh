//===- common.cuh - helpers shared by the CUDA library kernels --*- CUDA -*-===//
//
// Storage types (float, bf16, f16) and their vector loads, deterministic
// row-group reductions and the error word. A
// "row group" is TPR consecutive threads of a block working on one row:
// TPR = 32 is one warp (butterfly shuffles only), TPR > 32 a multiple of 32
// threads that also exchange per-warp partials through shared memory. Every
// reduction has a fixed order and gives all threads of the group the same
// bits (a butterfly adds a + b on one lane and b + a on its partner, which
// IEEE addition makes equal), so results never depend on scheduling.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_COMMON_CUH
#define TCC_RUNTIME_KERNELS_CUDA_COMMON_CUH

#include "kernels/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tcc::cuda::detail {

constexpr unsigned kFullMask = 0xffffffffu;

inline Status invalid() { return static_cast<Status>(cudaErrorInvalidValue); }

/// The launch's status: configuration errors of the kernels just enqueued
/// (and any earlier sticky error).
inline Status launched() { return static_cast<Status>(cudaGetLastError()); }

inline bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rounds a workspace section up to 256 bytes, so every section is aligned
/// for any vector access.
inline size_t roundUp256(size_t bytes) { return (bytes + 255) & ~size_t(255); }

/// Records `row` in the error word (smallest wins). -1 (no error) is the
/// largest unsigned value, so an unsigned atomic min keeps the first bad row.
__device__ __forceinline__ void recordError(int64_t *error, int64_t row) {
  if (error)
    atomicMin(reinterpret_cast<unsigned long long *>(error),
              static_cast<unsigned long long>(row));
}

/// The sequence of packed token r: the last s < sequences with cu[s] <= r
/// (binary search over the cu_seqlens prefix sums, cu[0] = 0; lengths may
/// be 0, so several entries can be equal). Every thread of a group runs the
/// same search on the same addresses.
__device__ __forceinline__ int64_t sequenceOf(const int32_t *cu,
                                              int64_t sequences, int64_t r) {
  int64_t lo = 0, hi = sequences; // cu[lo] <= r, s in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cu[mid] <= r)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

//===----------------------------------------------------------------------===//
// Storage types: float, __nv_bfloat16, __half. Values are widened exactly to
// float when loaded and rounded once, to nearest even, when stored.
//===----------------------------------------------------------------------===//

template <class T> constexpr bool kIsHalf = !std::is_same_v<T, float>;

/// Elements of T in 16 bytes: 4 floats or 8 16-bit values.
template <class T> constexpr int kVecWidth = 16 / int(sizeof(T));

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }

template <class T> __device__ __forceinline__ T fromFloat(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return __float2half_rn(v);
}

/// Two 16-bit values packed in a 32-bit word (the lower address in the low
/// half), widened.
template <class T> __device__ __forceinline__ float2 unpack2(uint32_t w) {
  static_assert(kIsHalf<T>, "16-bit types only");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 h;
    memcpy(&h, &w, 4);
    return __bfloat1622float2(h);
  } else {
    __half2 h;
    memcpy(&h, &w, 4);
    return __half22float2(h);
  }
}

/// a (low half) and b (high half) rounded to T and packed.
template <class T> __device__ __forceinline__ uint32_t pack2(float a, float b) {
  static_assert(kIsHalf<T>, "16-bit types only");
  uint32_t w;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&w, &h, 4);
  } else {
    __half2 h = __floats2half2_rn(a, b);
    memcpy(&w, &h, 4);
  }
  return w;
}

/// Calls f(T{}) with T the storage type of `type`.
template <class F> Status dispatchType(FloatType type, F &&f) {
  switch (type) {
  case FloatType::F32:
    return f(float{});
  case FloatType::BF16:
    return f(__nv_bfloat16{});
  case FloatType::F16:
    return f(__half{});
  }
  return invalid();
}

/// Element i of a float tensor stored as `type` (a uniform branch: for
/// operands whose type may differ from the kernel's, read rarely).
__device__ __forceinline__ float loadAs(FloatType type, const void *p,
                                        int64_t i) {
  if (type == FloatType::BF16)
    return toFloat(static_cast<const __nv_bfloat16 *>(p)[i]);
  if (type == FloatType::F16)
    return toFloat(static_cast<const __half *>(p)[i]);
  return static_cast<const float *>(p)[i];
}

/// N consecutive elements at p, widened to float. float: N = 1, 2 or a
/// multiple of 4, p aligned to min(16, 4N) bytes; 16-bit: N = 1, 2, 4 or a
/// multiple of 8, p aligned to min(16, 2N) bytes.
template <int N, class T>
__device__ __forceinline__ void loadVec(const T *p, float (&v)[N]) {
  if constexpr (N == 1) {
    v[0] = toFloat(p[0]);
  } else if constexpr (!kIsHalf<T>) {
    if constexpr (N == 2) {
      float2 t = *reinterpret_cast<const float2 *>(p);
      v[0] = t.x;
      v[1] = t.y;
    } else {
      static_assert(N % 4 == 0, "vector width");
#pragma unroll
      for (int i = 0; i < N / 4; ++i) {
        float4 t = reinterpret_cast<const float4 *>(p)[i];
        v[4 * i] = t.x;
        v[4 * i + 1] = t.y;
        v[4 * i + 2] = t.z;
        v[4 * i + 3] = t.w;
      }
    }
  } else {
    static_assert(N == 2 || N == 4 || N % 8 == 0, "vector width");
    constexpr int W = N == 2 ? 1 : N == 4 ? 2 : 4; // 32-bit words per load
    uint32_t w[N / 2];
#pragma unroll
    for (int i = 0; i < N / (2 * W); ++i) {
      if constexpr (W == 1) {
        w[i] = *reinterpret_cast<const uint32_t *>(p);
      } else if constexpr (W == 2) {
        uint2 t = *reinterpret_cast<const uint2 *>(p);
        w[0] = t.x;
        w[1] = t.y;
      } else {
        uint4 t = reinterpret_cast<const uint4 *>(p)[i];
        w[4 * i] = t.x;
        w[4 * i + 1] = t.y;
        w[4 * i + 2] = t.z;
        w[4 * i + 3] = t.w;
      }
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      float2 f = unpack2<T>(w[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  }
}

/// Stores N floats at p rounded to T (the alignment rules of loadVec).
template <int N, class T>
__device__ __forceinline__ void storeVec(T *p, const float (&v)[N]) {
  if constexpr (N == 1) {
    p[0] = fromFloat<T>(v[0]);
  } else if constexpr (!kIsHalf<T>) {
    if constexpr (N == 2) {
      *reinterpret_cast<float2 *>(p) = make_float2(v[0], v[1]);
    } else {
      static_assert(N % 4 == 0, "vector width");
#pragma unroll
      for (int i = 0; i < N / 4; ++i)
        reinterpret_cast<float4 *>(p)[i] =
            make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    }
  } else {
    static_assert(N == 2 || N == 4 || N % 8 == 0, "vector width");
    uint32_t w[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
      w[i] = pack2<T>(v[2 * i], v[2 * i + 1]);
    if constexpr (N == 2) {
      *reinterpret_cast<uint32_t *>(p) = w[0];
    } else if constexpr (N == 4) {
      *reinterpret_cast<uint2 *>(p) = make_uint2(w[0], w[1]);
    } else {
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
        reinterpret_cast<uint4 *>(p)[i] =
            make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
    }
  }
}

/// Threads per block of a row kernel with TPR threads per row.
template <int TPR> constexpr int rowBlockThreads() {
  return TPR < 256 ? 256 : TPR;
}

/// Shared scratch a row-group reduction needs (one slot per warp).
template <int TPR> struct RowScratch {
  static constexpr int kWarps = rowBlockThreads<TPR>() / 32;
  double sum[kWarps];
  float max[kWarps];
  int flag[kWarps];
};

/// Sum over the row group, the same bits in every thread of the group.
/// Every thread of the block must call it (it synchronises when TPR > 32).
template <int TPR>
__device__ __forceinline__ double groupSum(double v, RowScratch<TPR> &s) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync(kFullMask, v, off);
  if constexpr (TPR > 32) {
    constexpr int W = TPR / 32;
    const int warp = threadIdx.x / 32, first = warp - warp % W;
    if ((threadIdx.x & 31) == 0)
      s.sum[warp] = v;
    __syncthreads();
    v = s.sum[first];
#pragma unroll
    for (int i = 1; i < W; ++i)
      v += s.sum[first + i];
    __syncthreads();
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Online (max, sum of exp) over a row, with the CPU kernels' special cases
//===----------------------------------------------------------------------===//

/// Running maximum m of the non-NaN elements, sum s = sum(exp(x - m)) over
/// the elements above -inf (in double), and whether a NaN was seen.
struct MaxSum {
  float m = -INFINITY;
  double s = 0.0;
  bool nan = false;

  __device__ __forceinline__ void add(float x) {
    if (x != x) {
      nan = true;
    } else if (x > m) {
      // m == -inf gives exp(-inf) = 0 and s == 0 before the first element.
      s = s * static_cast<double>(expf(m - x)) + 1.0;
      m = x;
    } else if (x > -INFINITY) {
      s += static_cast<double>(expf(x - m));
    }
  }

  __device__ __forceinline__ void merge(float m2, double s2, bool nan2) {
    float mm = fmaxf(m, m2);
    double a = m == -INFINITY ? 0.0 : s * static_cast<double>(expf(m - mm));
    double b = m2 == -INFINITY ? 0.0 : s2 * static_cast<double>(expf(m2 - mm));
    m = mm;
    s = a + b;
    nan = nan || nan2;
  }

  /// The row is all NaN in softmax / log_softmax: a NaN, or an infinite
  /// maximum (all -inf, an empty row, or a +inf) as the CPU kernels give.
  __device__ __forceinline__ bool bad() const {
    return nan || m == INFINITY || m == -INFINITY;
  }
};

/// Combines the MaxSum of every thread of the row group (same bits in every
/// thread). Every thread of the block must call it.
template <int TPR>
__device__ __forceinline__ void groupMaxSum(MaxSum &v, RowScratch<TPR> &s) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    float m2 = __shfl_xor_sync(kFullMask, v.m, off);
    double s2 = __shfl_xor_sync(kFullMask, v.s, off);
    int n2 = __shfl_xor_sync(kFullMask, int(v.nan), off);
    v.merge(m2, s2, n2 != 0);
  }
  if constexpr (TPR > 32) {
    constexpr int W = TPR / 32;
    const int warp = threadIdx.x / 32, first = warp - warp % W;
    if ((threadIdx.x & 31) == 0) {
      s.max[warp] = v.m;
      s.sum[warp] = v.s;
      s.flag[warp] = v.nan;
    }
    __syncthreads();
    MaxSum t;
    t.m = s.max[first];
    t.s = s.sum[first];
    t.nan = s.flag[first] != 0;
#pragma unroll
    for (int i = 1; i < W; ++i)
      t.merge(s.max[first + i], s.sum[first + i], s.flag[first + i] != 0);
    v = t;
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// Row kernels: dispatch on the row length and alignment
//===----------------------------------------------------------------------===//

/// Threads per row for rows of `len` floats: one warp for short rows, 128
/// threads up to 2048, else 512 (one row per block).
inline int threadsPerRow(int64_t len) {
  return len <= 128 ? 32 : len <= 2048 ? 128 : 512;
}

template <int N> using Int = std::integral_constant<int, N>;

/// Calls f(Int<TPR>, Int<VEC>) for the row configuration of `len`; VEC = VW
/// (16-byte accesses: kVecWidth of the storage type) when `vec` holds, else
/// 1.
template <int VW = 4, class F> Status dispatchRows(int64_t len, bool vec, F &&f) {
  int tpr = threadsPerRow(len);
  if (vec) {
    if (tpr == 32)
      return f(Int<32>{}, Int<VW>{});
    if (tpr == 128)
      return f(Int<128>{}, Int<VW>{});
    return f(Int<512>{}, Int<VW>{});
  }
  if (tpr == 32)
    return f(Int<32>{}, Int<1>{});
  if (tpr == 128)
    return f(Int<128>{}, Int<1>{});
  return f(Int<512>{}, Int<1>{});
}

/// Blocks of a row kernel over `rows` rows.
template <int TPR> inline unsigned rowGrid(int64_t rows) {
  constexpr int perBlock = rowBlockThreads<TPR>() / TPR;
  return static_cast<unsigned>(ceilDiv(rows, perBlock));
}

/// This thread's row and its index within the row group.
template <int TPR> struct RowPos {
  int64_t row;
  int t;
  __device__ __forceinline__ RowPos() {
    constexpr int perBlock = rowBlockThreads<TPR>() / TPR;
    row = int64_t(blockIdx.x) * perBlock + threadIdx.x / TPR;
    t = threadIdx.x % TPR;
  }
};

} // namespace tcc::cuda::detail

#endif // TCC_RUNTIME_KERNELS_CUDA_COMMON_CUH
