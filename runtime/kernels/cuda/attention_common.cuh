//===- attention_common.cuh - shared by the attention kernels -*- CUDA -*-===//
//
// What the FMA attention (attention.cu) and the tensor-core kernels
// (attention_tc.cu, attention_tc_bwd.cu) share: the kernels' arguments, the
// masking of a score, the launcher of one kernel, and the entries of the
// tensor-core forward and backward.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_ATTENTION_COMMON_CUH
#define TCC_RUNTIME_KERNELS_CUDA_ATTENTION_COMMON_CUH

#include "kernels/attention_layout.h"
#include "kernels/cuda/common.cuh"

namespace tcc::cuda::attn {

/// The kernels' arguments. Tensors are untyped: each kernel reads q, k, v,
/// dout and out as its storage type T and writes o, dq, dk, dv as its
/// output type; lse and delta are float.
struct Params {
  const void *q, *k, *v, *dout, *out;
  const float *lse, *delta;
  void *o, *dq, *dk, *dv;
  float *lseOut;
  const uint8_t *keep;
  const void *bias;
  FloatType biasType;
  /// Variable-length sequences (pad-skipping), [B + 1] prefix sums: batch
  /// b holds a sequence of cu[b+1] - cu[b] tokens in its first rows (Tq ==
  /// Tk); its later rows are neither read as keys nor written. Null: every
  /// row is a token.
  const int32_t *cu;
  /// Packed documents: per (batch, query) the first key of the query's
  /// document and the first key past it (row offsets); keys outside are
  /// hidden. Null: none.
  const int32_t *docStart, *docEnd;
  /// Where q, k, v, o (the forward's result, the backward's dout), dq, dk
  /// and dv are (resolved: never default).
  kernels::AttentionLayout lay;
  int64_t heads, tq, tk;
  int d, dvDim;
  float scale;
  bool causal, vecQK, vecV;
};

/// Row 0 of (batch*head) pair bh of a tensor with strides `s`.
template <class T>
__device__ __forceinline__ T *headBase(const void *base,
                                       const kernels::AttentionStrides &s,
                                       int64_t bh, int64_t heads) {
  return static_cast<T *>(const_cast<void *>(base)) +
         s.at(bh / heads, bh % heads, 0);
}

/// Rows of batch b that hold tokens, of its `n` (tq or tk): all of them,
/// or its variable-length sequence's.
__device__ __forceinline__ int64_t seqRows(const Params &p, int64_t b,
                                           int64_t n) {
  if (!p.cu)
    return n;
  const int64_t len = p.cu[b + 1] - p.cu[b];
  return len < n ? len : n;
}

/// The first key tile (of BC keys) a query tile starting at q0 needs: the
/// one holding its first query's document start (packed documents; a
/// document's later queries start no earlier), else 0.
template <int BC>
__device__ __forceinline__ int64_t firstKeyTile(const Params &p, int64_t b,
                                                int64_t q0) {
  return p.docStart ? int64_t(p.docStart[b * p.tq + q0]) / BC * BC : 0;
}

/// The masked, scaled score of query i and key j (key j < tk), given the
/// raw dot product: the CPU kernel's order (scale, hide, add bias).
__device__ __forceinline__ float maskScore(const Params &p, float dot,
                                           int64_t b, int64_t i, int64_t j) {
  float x = dot * p.scale;
  if (p.causal && j > i)
    x = -INFINITY;
  if (p.keep && !p.keep[b * p.tk + j])
    x = -INFINITY;
  // (Rows of a tile past tq are computed and dropped: no document.)
  if (p.docStart && i < p.tq &&
      (j < p.docStart[b * p.tq + i] || j >= p.docEnd[b * p.tq + i]))
    x = -INFINITY;
  if (p.bias)
    x += detail::loadAs(p.biasType, p.bias, b * p.tk + j);
  return x;
}

/// P of a (query, key) pair from its masked score and the query's L: 0 for
/// hidden keys, NaN for every key of a query whose L is not finite (all
/// keys hidden, or a NaN score), as the CPU kernel's all-NaN probabilities.
__device__ __forceinline__ float prob(float x, float L) {
  if (!(L > -INFINITY && L < INFINITY))
    return NAN;
  return x == -INFINITY ? 0.f : expf(x - L);
}

/// Launches `kernel` on `blocks` blocks of `threads` with `smemBytes` of
/// dynamic shared memory (raising the kernel's limit past 48 KB).
template <class Kernel>
Status launchKernel(Kernel kernel, int64_t blocks, int threads,
                    size_t smemBytes, cudaStream_t stream, const Params &p) {
  if (blocks <= 0)
    return 0;
  if (blocks > INT32_MAX)
    return detail::invalid();
  if (smemBytes > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(smemBytes));
    if (e != cudaSuccess)
      return static_cast<Status>(e);
  }
  kernel<<<static_cast<unsigned>(blocks), threads, smemBytes, stream>>>(p);
  return detail::launched();
}

/// The tensor-core forward of attention_tc.cu (T = __nv_bfloat16 or
/// __half; out of TO = T, or float for the backward's recomputation; the
/// caller checked tensorCoresFit).
template <class T, class TO>
Status launchFwdTc(const Params &p, int64_t bh, cudaStream_t stream);

/// The tensor-core backward of attention_tc_bwd.cu: dq, dk, dv from p.lse
/// and p.delta (same types and conditions as launchFwdTc).
template <class T>
Status launchBwdTc(const Params &p, int64_t bh, cudaStream_t stream);

/// attention.cu's dense forward and backward (without a key mask), for
/// attention_varlen.cu: `cu` bounds each batch's rows to its sequence,
/// docStart / docEnd each query's keys to its document (Params). The
/// backward recomputes the forward in `workspace`
/// (recomputingBwdWorkspaceBytes).
Status checkShapes(int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv);
size_t recomputingBwdWorkspaceBytes(int64_t batch, int64_t heads, int64_t tq,
                                    int64_t dv);
Status denseFwd(FloatType type, const void *q, const void *k, const void *v,
                void *out, int64_t batch, int64_t heads, int64_t tq,
                int64_t tk, int64_t d, int64_t dv, double scale, bool causal,
                cudaStream_t stream, AttentionPath path, const int32_t *cu,
                const int32_t *docStart, const int32_t *docEnd,
                const kernels::AttentionLayout &layout);
Status denseBwd(FloatType type, const void *q, const void *k, const void *v,
                const void *dout, void *dq, void *dk, void *dv, int64_t batch,
                int64_t heads, int64_t tq, int64_t tk, int64_t d,
                int64_t dvDim, double scale, bool causal, void *workspace,
                cudaStream_t stream, AttentionPath path, const int32_t *cu,
                const int32_t *docStart, const int32_t *docEnd,
                const kernels::AttentionLayout &layout);

} // namespace tcc::cuda::attn

#endif // TCC_RUNTIME_KERNELS_CUDA_ATTENTION_COMMON_CUH
