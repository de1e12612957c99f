//===- attention_tc.cuh - tensor-core building blocks of attention -*- CUDA -*-===//
//
// What the tensor-core forward (attention_tc.cu) and backward
// (attention_tc_bwd.cu) share: the tile configuration, ldmatrix, the
// m16n8k16 MMA and the cp.async tile copy. Fragment layouts (PTX ISA,
// mma.m16n8k16 with .row.col): lane l, g = l / 4, t4 = l % 4;
//   A 16x16: a0 (row g, cols 2t4, 2t4+1), a1 (row g+8, same cols),
//            a2 (row g, cols 2t4+8, +9), a3 (row g+8, cols 2t4+8, +9);
//   B 16x8:  b0 (k rows 2t4, 2t4+1, col g), b1 (k rows 2t4+8, +9, col g);
//   C 16x8:  c0, c1 (row g, cols 2t4, 2t4+1), c2, c3 (row g+8, same cols).
// So the accumulators of two adjacent n-tiles, rounded and packed in pairs,
// are the A fragment of one 16-wide k-step (P V, dS K, ...).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_ATTENTION_TC_CUH
#define TCC_RUNTIME_KERNELS_CUDA_ATTENTION_TC_CUH

#include "kernels/cuda/attention_common.cuh"

namespace tcc::cuda::attn {

template <int HD_> struct TcCfg {
  static constexpr int HD = HD_;
  static constexpr int WARPS = 4;
  static constexpr int BR = 16 * WARPS; ///< queries per block
  static constexpr int BC = 64;         ///< keys per step
  static constexpr int NT = 32 * WARPS;
  /// Blocks an SM keeps resident (__launch_bounds__): head dim 64 fits 4
  /// in the register file at 128 registers a thread.
  static constexpr int MIN_BLOCKS = HD == 64 ? 4 : 1;
  static constexpr int LD = HD + 8; ///< shared row stride (elements)
  static constexpr size_t smemBytes() {
    return size_t(BR + 2 * BC) * LD * 2;
  }
};

/// log2(e): exp(x) = 2^(x log2(e)), one FMA and ex2 per score.
constexpr float kLog2e = 1.4426950408889634f;

/// Whether every score of a tile of queries [q0, q0 + rows) and keys
/// [k0, k0 + cols) is maskScore's scaled dot product alone: no key mask,
/// every query and key inside the sequence (tq, tk), and none hidden
/// causally. Uniform over a block: it picks the tile's unmasked fast path.
__device__ __forceinline__ bool visibleTile(const Params &p, int64_t q0,
                                            int64_t rows, int64_t tq,
                                            int64_t k0, int64_t cols,
                                            int64_t tk) {
  return !p.keep && !p.bias && !p.docStart && q0 + rows <= tq &&
         k0 + cols <= tk && !(p.causal && k0 + cols - 1 > q0);
}

/// The forward's L of a query as the backward's prob() uses it: NaN where
/// it is not finite (every probability of that query is then NaN), so
/// exp(x - L) alone is prob() for a visible key.
__device__ __forceinline__ float backwardLse(float L) {
  return L > -INFINITY && L < INFINITY ? L : NAN;
}

__device__ __forceinline__ uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Four 8x8 16-bit matrices; lane l gives the address of row l % 8 of
/// matrix l / 8 and receives, in r[i], its two elements of matrix i:
/// row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (TRANS: row and column
/// swapped).
template <bool TRANS>
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], const void *p) {
  if constexpr (TRANS)
    asm volatile(
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(smemAddress(p)));
  else
    asm volatile(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(smemAddress(p)));
}

/// d += a b: a 16x16 (row-major A fragment), b 16x8 (col-major B fragment,
/// b0 b1), d 16x8 f32.
template <class T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4],
                                         uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
}

/// Starts copying rows [row0, row0 + R) of a [nrows, HD] matrix of 16-bit
/// values whose rows are `srcLd` apart into shared memory as stored (row
/// stride LD), zero past nrows: 16-byte cp.async copies (the base is
/// 16-byte aligned, HD and srcLd multiples of 8), committed as one group.
/// The caller waits for the group (cpAsyncWait) and then synchronises the
/// block.
template <int R, int HD, int LD, int NT, class T>
__device__ __forceinline__ void copyTileAsync(T *dst, const T *src,
                                              int64_t srcLd, int64_t nrows,
                                              int64_t row0) {
  constexpr int C8 = HD / 8;
  for (int idx = threadIdx.x; idx < R * C8; idx += NT) {
    const int r = idx / C8, c = (idx % C8) * 8;
    const int64_t gr = row0 + r;
    const bool valid = gr < nrows;
    // An invalid row reads nothing (source size 0: 16 zero bytes written);
    // its address stays inside the tensor anyway.
    const T *from = src + (valid ? gr * srcLd + c : 0);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                     smemAddress(dst + r * LD + c)),
                 "l"(from), "r"(valid ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

/// Waits until at most N of this thread's cp.async groups are pending.
template <int N> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}


/// The A fragment of k-step kk (16 columns) from the f32 accumulators of
/// n-tiles 2 kk and 2 kk + 1, rounded to T.
template <class T, int N>
__device__ __forceinline__ void accToA(uint32_t (&a)[4], const float (&acc)[N][4],
                                       int kk) {
  using detail::pack2;
  a[0] = pack2<T>(acc[2 * kk][0], acc[2 * kk][1]);
  a[1] = pack2<T>(acc[2 * kk][2], acc[2 * kk][3]);
  a[2] = pack2<T>(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
  a[3] = pack2<T>(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
}

/// The A fragment of rows [r0, r0 + 16) x columns [c0, c0 + 16) of a
/// row-major shared tile (row stride LD elements).
template <int LD, class T>
__device__ __forceinline__ void loadA(uint32_t (&a)[4], const T *tile, int r0,
                                      int c0, int lane) {
  const int lm = lane / 8, lr = lane % 8;
  ldmatrixX4<false>(a, tile + (r0 + lr + (lm % 2) * 8) * LD + c0 + (lm / 2) * 8);
}

/// B fragments of two n-tiles (rows n0..n0+7 and n0+8..n0+15 of the tile
/// as the n index, columns c0..c0+15 as k): B = tile^T, e.g. K for Q K^T.
/// b[0], b[1] for n-tile n0; b[2], b[3] for n0 + 8.
template <int LD, class T>
__device__ __forceinline__ void loadBt(uint32_t (&b)[4], const T *tile, int n0,
                                       int c0, int lane) {
  const int lm = lane / 8, lr = lane % 8;
  ldmatrixX4<false>(b, tile + (n0 + lr + (lm / 2) * 8) * LD + c0 + (lm % 2) * 8);
}

/// B fragments of two n-tiles of B = tile (rows r0..r0+15 as k, columns
/// c0..c0+7 and c0+8..c0+15 as n), e.g. V for P V: b[0], b[1] for columns
/// c0.., b[2], b[3] for c0 + 8...
template <int LD, class T>
__device__ __forceinline__ void loadB(uint32_t (&b)[4], const T *tile, int r0,
                                      int c0, int lane) {
  const int lm = lane / 8, lr = lane % 8;
  ldmatrixX4<true>(b, tile + (r0 + lr + (lm % 2) * 8) * LD + c0 + (lm / 2) * 8);
}

} // namespace tcc::cuda::attn

#endif // TCC_RUNTIME_KERNELS_CUDA_ATTENTION_TC_CUH
