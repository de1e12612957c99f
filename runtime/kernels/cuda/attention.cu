// Flash-style attention, forward and backward, in FP32 on the FMA units,
// for float, bf16 and f16 storage (the tiles are widened to float as they
// are copied into shared memory; outputs are rounded once to the storage
// type). The bf16/f16 forward and backward on tensor cores are
// attention_tc.cu and attention_tc_bwd.cu; the kernels' arguments and
// masking are shared with them (attention_common.cuh), and the entry
// points here pick the path.
//
// Forward: one block per (batch*head, tile of BR queries). The query tile
// stays in shared memory (transposed, [d][query]); tiles of BC keys and
// values stream through shared memory. Each thread owns RPT query rows x 4
// key columns of the score tile and RPT rows x CPT output columns of the
// accumulator, both in registers, computed as register-tiled outer products
// over shared memory (16-byte shared loads, 32-64 FMAs per 3 loads). The
// softmax is online: per query a running max m and sum l; when m grows the
// accumulator and l are rescaled by exp(m_old - m_new). The probabilities
// of a tile go through shared memory once (transposed) to multiply V. The
// scores never leave the block; nothing of size Tq x Tk is stored.
//
// Backward (FlashAttention-2's algorithm, made deterministic): with the
// forward's log-sum-exp L, P = exp(S - L) is recomputed tile by tile, and
// delta = rowsum(dO * O) replaces sum_j P dP. dQ and dK/dV are separate
// kernels (one block per query tile looping over key tiles; one per key
// tile looping over query tiles) so every output element is owned by one
// block and accumulated in a fixed order; S and dP are computed in both,
// the price of needing no atomics.
//
// Masking follows runtime/kernels/cpu/attention.cpp: a score is
// float(scale * q.k); causal (j > i) and keep == 0 make it -inf; then the
// bias is added. A query whose scores are all -inf (or any NaN) gets NaN,
// because l = 0 (or NaN) divides the accumulator.
//
// Head dims d, dv <= 128, padded to HD = 32, 64 or 128 in shared memory
// (zeros, so the padding adds nothing). float32 stays off the tensor
// cores: TF32 (mma.sync m16n8k8) would lose the 1e-5 agreement an fp32
// path promises; a TF32 or 3xTF32 variant is future work.
#include "kernels/cuda/attention_common.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;
using namespace attn;

/// Tile configuration: BR rows owned by the block (queries, or keys in the
/// dK/dV kernel), BC columns of the score tile per step, RPT rows per thread.
template <int HD_, int BR_, int BC_, int RPT_> struct Cfg {
  static constexpr int HD = HD_, BR = BR_, BC = BC_, RPT = RPT_;
  static constexpr int TX = BC / 4;   // threads along a row (4 score cols each)
  static constexpr int TY = BR / RPT; // threads along the rows
  static constexpr int NT = TX * TY;  // threads per block
  static constexpr int CPT = HD / TX; // accumulator columns per thread
  static constexpr int LDR = BR + 4;  // leading dims: 16-byte aligned rows
  static constexpr int LDC = BC + 4;
  static constexpr int LDH = HD + 4;
  static_assert(32 % TX == 0, "a row's threads must be lanes of one warp");
  static_assert(NT % 32 == 0 && NT <= 1024, "whole warps");
  static_assert(HD % TX == 0 && (CPT == 2 || CPT % 4 == 0), "accumulator");
  static_assert(RPT == 2 || RPT % 4 == 0, "row vector");
};

/// Column of accumulator element cc of thread tx: float2 pairs when CPT is
/// 2, else groups of 4 strided by TX * 4 so a warp's float4 loads of a
/// shared row are contiguous (no bank conflicts).
template <int CPT, int TX>
__device__ __forceinline__ int accCol(int tx, int cc) {
  if constexpr (CPT == 2)
    return tx * 2 + cc;
  else
    return (cc / 4) * (TX * 4) + tx * 4 + cc % 4;
}

template <int CPT, int TX>
__device__ __forceinline__ void loadAccRow(const float *row, int tx,
                                           float (&v)[CPT]) {
  if constexpr (CPT == 2) {
    loadVec<2>(row + tx * 2, v);
  } else {
#pragma unroll
    for (int g = 0; g < CPT / 4; ++g) {
      float4 t = *reinterpret_cast<const float4 *>(row + g * TX * 4 + tx * 4);
      v[4 * g] = t.x;
      v[4 * g + 1] = t.y;
      v[4 * g + 2] = t.z;
      v[4 * g + 3] = t.w;
    }
  }
}

/// acc[r][c] += sum_k A[k * lda + r] * B_k[c] for k < K: A is k-major and
/// already offset to this thread's first row; B is k-major, its columns
/// those of loadAccRow<C, TX> (C = 4 with TX threads: tx * 4 + c).
template <int R, int C, int K, int TX>
__device__ __forceinline__ void mmaKM(float (&acc)[R][C], const float *A,
                                      int lda, const float *B, int ldb,
                                      int tx) {
#pragma unroll 4
  for (int k = 0; k < K; ++k) {
    float a[R], b[C];
    loadVec<R>(A + k * lda, a);
    loadAccRow<C, TX>(B + k * ldb, tx, b);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < C; ++c)
        acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

/// Copies rows [row0, row0 + R) of a [nrows, ncols] matrix of S (float,
/// bf16, f16; widened) whose rows are `srcLd` apart into shared memory as
/// float R x HD (row-major, dst[r * ld + c]) or HD x R (TRANS, dst[c * ld
/// + r]), zero outside the matrix. Coalesced 16-byte (float) / 8-byte
/// (16-bit) global loads when `vec4` (ncols and srcLd multiples of 4, a
/// 16-byte aligned base).
template <int R, int HD, int NT, bool TRANS, class S>
__device__ __forceinline__ void loadTile(float *dst, int ld, const S *src,
                                         int64_t nrows, int ncols,
                                         int64_t srcLd, int64_t row0,
                                         bool vec4) {
  constexpr int C4 = HD / 4;
  for (int idx = threadIdx.x; idx < R * C4; idx += NT) {
    const int r = idx / C4, c = (idx % C4) * 4;
    const int64_t gr = row0 + r;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (gr < nrows && c < ncols) {
      const S *p = src + gr * srcLd + c;
      if (vec4) {
        loadVec<4>(p, v); // widened to float
      } else {
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (c + u < ncols)
            v[u] = toFloat(p[u]);
      }
    }
    if constexpr (TRANS) {
#pragma unroll
      for (int u = 0; u < 4; ++u)
        dst[(c + u) * ld + r] = v[u];
    } else {
      storeVec<4>(dst + r * ld + c, v);
    }
  }
}

/// Stores this thread's RPT x 4 score-tile values transposed: the value of
/// row r, column c goes to dst[(tx * 4 + c) * ld + ty * RPT + r].
template <int RPT>
__device__ __forceinline__ void storeTransposed(float *dst, int ld, int tx,
                                                int ty,
                                                const float (&v)[RPT][4]) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    float col[RPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
      col[r] = v[r][c];
    storeVec<RPT>(dst + (tx * 4 + c) * ld + ty * RPT, col);
  }
}

/// Reduction over the TX lanes of a row group (butterfly: same bits in
/// every lane).
template <int TX> __device__ __forceinline__ float rowMax(float v) {
#pragma unroll
  for (int off = TX / 2; off > 0; off >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}
template <int TX> __device__ __forceinline__ float rowSum(float v) {
#pragma unroll
  for (int off = TX / 2; off > 0; off >>= 1)
    v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <class C> constexpr size_t fwdSmemFloats() {
  return size_t(C::HD) * C::LDR      // QsT [HD][BR]
         + size_t(C::HD) * C::LDC    // KsT [HD][BC]
         + size_t(C::BC) * C::LDH    // Vs  [BC][HD]
         + size_t(C::BC) * C::LDR;   // PsT [BC][BR]
}

/// T: how q, k, v are stored; TO: how out is (T, or float for the
/// backward's recomputation into its workspace).
template <class C, class T, class TO>
__global__ void __launch_bounds__(C::NT) attentionFwdKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, RPT = C::RPT, TX = C::TX,
                CPT = C::CPT, NT = C::NT;
  extern __shared__ float4 smem4[];
  float *QsT = reinterpret_cast<float *>(smem4);
  float *KsT = QsT + HD * C::LDR;
  float *Vs = KsT + HD * C::LDC;
  float *PsT = Vs + BC * C::LDH;

  const int tid = threadIdx.x, ty = tid / TX, tx = tid % TX;
  const int64_t tiles = (p.tq + BR - 1) / BR;
  const int64_t bh = blockIdx.x / tiles, q0 = (blockIdx.x % tiles) * BR;
  const int64_t b = bh / p.heads;
  // Rows of this (batch, head): all, or a varlen sequence's (p.cu).
  const int64_t tq = seqRows(p, b, p.tq), tk = seqRows(p, b, p.tk);
  if (q0 >= tq)
    return; // past a varlen sequence's end: no query here
  const T *qp = headBase<const T>(p.q, p.lay.q, bh, p.heads);
  const T *kp = headBase<const T>(p.k, p.lay.k, bh, p.heads);
  const T *vp = headBase<const T>(p.v, p.lay.v, bh, p.heads);

  loadTile<BR, HD, NT, true>(QsT, C::LDR, qp, tq, p.d, p.lay.q.row, q0,
                             p.vecQK);

  float acc[RPT][CPT], m[RPT], l[RPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < CPT; ++c)
      acc[r][c] = 0.f;
  }

  // Under causal masking no query of this tile sees a key >= q0 + BR.
  const int64_t kEnd = p.causal && q0 + BR < tk ? q0 + BR : tk;
  for (int64_t k0 = firstKeyTile<BC>(p, b, q0); k0 < kEnd; k0 += BC) {
    __syncthreads(); // the previous tile's KsT / Vs / PsT reads are done
    loadTile<BC, HD, NT, true>(KsT, C::LDC, kp, tk, p.d, p.lay.k.row, k0,
                               p.vecQK);
    loadTile<BC, HD, NT, false>(Vs, C::LDH, vp, tk, p.dvDim, p.lay.v.row, k0,
                                p.vecV);
    __syncthreads();

    float s[RPT][4];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        s[r][c] = 0.f;
    mmaKM<RPT, 4, HD, TX>(s, QsT + ty * RPT, C::LDR, KsT, C::LDC, tx);

#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int64_t j = k0 + tx * 4 + c;
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        const int64_t i = q0 + ty * RPT + r;
        s[r][c] = j < tk ? maskScore(p, s[r][c], b, i, j) : -INFINITY;
      }
    }

#pragma unroll
    for (int r = 0; r < RPT; ++r) {
      float mx = fmaxf(fmaxf(s[r][0], s[r][1]), fmaxf(s[r][2], s[r][3]));
      const float mNew = fmaxf(m[r], rowMax<TX>(mx));
      // Nothing seen yet (m = -inf): the accumulator is 0, drop it.
      const float alpha = m[r] == -INFINITY ? 0.f : expf(m[r] - mNew);
      m[r] = mNew;
      float ls = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        // A NaN score stays NaN and poisons l and the row's output.
        float e = s[r][c] == -INFINITY ? 0.f : expf(s[r][c] - mNew);
        s[r][c] = e;
        ls += e;
      }
      l[r] = l[r] * alpha + ls;
#pragma unroll
      for (int c = 0; c < CPT; ++c)
        acc[r][c] *= alpha;
    }
    storeTransposed<RPT>(PsT, C::LDR, tx, ty, s);
    __syncthreads();
    mmaKM<RPT, CPT, BC, TX>(acc, PsT + ty * RPT, C::LDR, Vs, C::LDH, tx);
  }

#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const float total = rowSum<TX>(l[r]);
    const int64_t i = q0 + ty * RPT + r;
    if (i >= tq)
      continue;
    TO *orow = headBase<TO>(p.o, p.lay.o, bh, p.heads) + i * p.lay.o.row;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int col = accCol<CPT, TX>(tx, c);
      if (col < p.dvDim)
        orow[col] = fromFloat<TO>(tk == 0 ? 0.f : acc[r][c] / total);
    }
    if (p.lseOut && tx == 0)
      p.lseOut[bh * p.tq + i] = m[r] + logf(total);
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// delta[row] = sum_e dout[row][e] * out[row][e] (double sum), one warp per
/// row = (batch*head) * tq + query; dout of T at its strides, out of TO (T,
/// or float when recomputed) at its.
template <class T, class TO>
__global__ void __launch_bounds__(256)
    attentionDeltaKernel(const T *dout, kernels::AttentionStrides gs,
                         const TO *out, kernels::AttentionStrides os,
                         float *delta, int64_t rows, int64_t heads,
                         int64_t tq, int dv) {
  const int64_t row = int64_t(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  // rows = batch * heads * tq > 0, so heads and tq are.
  const int64_t bh = row / tq, i = row - bh * tq;
  const int64_t b = bh / heads, h = bh - b * heads;
  double s = 0;
  const bool valid = row < rows;
  if (valid)
    for (int e = lane; e < dv; e += 32)
      s += static_cast<double>(toFloat(dout[gs.at(b, h, i) + e])) *
           toFloat(out[os.at(b, h, i) + e]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1)
    s += __shfl_xor_sync(kFullMask, s, off);
  if (valid && lane == 0)
    delta[row] = static_cast<float>(s);
}

template <class C> constexpr size_t dqSmemFloats() {
  constexpr size_t kst = size_t(C::HD) * C::LDC, dsst = size_t(C::BC) * C::LDR;
  return size_t(C::HD) * C::LDR      // QsT  [HD][BR]
         + size_t(C::HD) * C::LDR    // dOsT [HD][BR]
         + (kst > dsst ? kst : dsst) // KsT [HD][BC], then dSsT [BC][BR]
         + size_t(C::BC) * C::LDH    // Ks   [BC][HD]
         + size_t(C::HD) * C::LDC;   // VsT  [HD][BC]
}

/// dq = scale * sum_j dS_ij k_j with dS = P * (dP - delta), dP = dO V^T.
template <class C, class T>
__global__ void __launch_bounds__(C::NT) attentionDqKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, RPT = C::RPT, TX = C::TX,
                CPT = C::CPT, NT = C::NT;
  constexpr size_t kst = size_t(HD) * C::LDC, dsst = size_t(BC) * C::LDR;
  extern __shared__ float4 smem4[];
  float *QsT = reinterpret_cast<float *>(smem4);
  float *dOsT = QsT + HD * C::LDR;
  float *KsT = dOsT + HD * C::LDR;
  float *dSsT = KsT; // reuses KsT once the scores are computed
  float *Ks = KsT + (kst > dsst ? kst : dsst);
  float *VsT = Ks + BC * C::LDH;

  const int tid = threadIdx.x, ty = tid / TX, tx = tid % TX;
  const int64_t tiles = (p.tq + BR - 1) / BR;
  const int64_t bh = blockIdx.x / tiles, q0 = (blockIdx.x % tiles) * BR;
  const int64_t b = bh / p.heads;
  // Rows of this (batch, head): all, or a varlen sequence's (p.cu).
  const int64_t tq = seqRows(p, b, p.tq), tk = seqRows(p, b, p.tk);
  if (q0 >= tq)
    return; // past a varlen sequence's end: no query here
  const T *kp = headBase<const T>(p.k, p.lay.k, bh, p.heads);
  const T *vp = headBase<const T>(p.v, p.lay.v, bh, p.heads);

  loadTile<BR, HD, NT, true>(QsT, C::LDR,
                             headBase<const T>(p.q, p.lay.q, bh, p.heads), tq,
                             p.d, p.lay.q.row, q0, p.vecQK);
  loadTile<BR, HD, NT, true>(dOsT, C::LDR,
                             headBase<const T>(p.dout, p.lay.o, bh, p.heads),
                             tq, p.dvDim, p.lay.o.row, q0, p.vecV);
  float L[RPT], D[RPT], acc[RPT][CPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const int64_t i = q0 + ty * RPT + r;
    L[r] = i < tq ? p.lse[bh * p.tq + i] : 0.f;
    D[r] = i < tq ? p.delta[bh * p.tq + i] : 0.f;
#pragma unroll
    for (int c = 0; c < CPT; ++c)
      acc[r][c] = 0.f;
  }

  const int64_t kEnd = p.causal && q0 + BR < tk ? q0 + BR : tk;
  for (int64_t k0 = firstKeyTile<BC>(p, b, q0); k0 < kEnd; k0 += BC) {
    __syncthreads(); // the previous tile's dSsT / Ks reads are done
    loadTile<BC, HD, NT, true>(KsT, C::LDC, kp, tk, p.d, p.lay.k.row, k0,
                               p.vecQK);
    loadTile<BC, HD, NT, false>(Ks, C::LDH, kp, tk, p.d, p.lay.k.row, k0,
                                p.vecQK);
    loadTile<BC, HD, NT, true>(VsT, C::LDC, vp, tk, p.dvDim, p.lay.v.row, k0,
                               p.vecV);
    __syncthreads();

    float s[RPT][4], dp[RPT][4];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        s[r][c] = dp[r][c] = 0.f;
    mmaKM<RPT, 4, HD, TX>(s, QsT + ty * RPT, C::LDR, KsT, C::LDC, tx);
    mmaKM<RPT, 4, HD, TX>(dp, dOsT + ty * RPT, C::LDR, VsT, C::LDC, tx);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int64_t j = k0 + tx * 4 + c;
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        const int64_t i = q0 + ty * RPT + r;
        float pr = 0.f;
        if (j < tk)
          pr = prob(maskScore(p, s[r][c], b, i, j), L[r]);
        s[r][c] = pr * (dp[r][c] - D[r]);
      }
    }
    __syncthreads(); // every thread is done with KsT before dSsT overwrites it
    storeTransposed<RPT>(dSsT, C::LDR, tx, ty, s);
    __syncthreads();
    mmaKM<RPT, CPT, BC, TX>(acc, dSsT + ty * RPT, C::LDR, Ks, C::LDH, tx);
  }

#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const int64_t i = q0 + ty * RPT + r;
    if (i >= tq)
      continue;
    T *row = headBase<T>(p.dq, p.lay.dq, bh, p.heads) + i * p.lay.dq.row;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int col = accCol<CPT, TX>(tx, c);
      if (col < p.d)
        row[col] = fromFloat<T>(acc[r][c] * p.scale);
    }
  }
}

template <class C> constexpr size_t dkvSmemFloats() {
  constexpr size_t qst = size_t(C::HD) * C::LDC, ps = size_t(C::BC) * C::LDR;
  constexpr size_t u = qst > ps ? qst : ps;
  return size_t(C::HD) * C::LDR    // KsT [HD][BR]
         + size_t(C::HD) * C::LDR  // VsT [HD][BR]
         + u                       // QsT [HD][BC], then Ps [BC][BR]
         + size_t(C::BC) * C::LDH  // Qs  [BC][HD]
         + u                       // dOsT [HD][BC], then dSs [BC][BR]
         + size_t(C::BC) * C::LDH  // dOs [BC][HD]
         + 2 * size_t(C::BC);      // L, delta of the query tile
}

/// dv = sum_i P_ij dO_i and dk = scale * sum_i dS_ij q_i for the BR keys of
/// the block; the score tile is held transposed (keys are the rows).
template <class C, class T>
__global__ void __launch_bounds__(C::NT) attentionDkvKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, RPT = C::RPT, TX = C::TX,
                CPT = C::CPT, NT = C::NT;
  constexpr size_t qst = size_t(HD) * C::LDC, ps = size_t(BC) * C::LDR;
  constexpr size_t u = qst > ps ? qst : ps;
  extern __shared__ float4 smem4[];
  float *KsT = reinterpret_cast<float *>(smem4);
  float *VsT = KsT + HD * C::LDR;
  float *QsT = VsT + HD * C::LDR;
  float *Ps = QsT;
  float *Qs = QsT + u;
  float *dOsT = Qs + BC * C::LDH;
  float *dSs = dOsT;
  float *dOs = dOsT + u;
  float *Ls = dOs + BC * C::LDH;
  float *Ds = Ls + BC;

  const int tid = threadIdx.x, ty = tid / TX, tx = tid % TX;
  const int64_t tiles = (p.tk + BR - 1) / BR;
  const int64_t bh = blockIdx.x / tiles, k0 = (blockIdx.x % tiles) * BR;
  const int64_t b = bh / p.heads;
  // Rows of this (batch, head): all, or a varlen sequence's (p.cu).
  const int64_t tq = seqRows(p, b, p.tq), tk = seqRows(p, b, p.tk);
  if (k0 >= tk)
    return; // past a varlen sequence's end: no key here
  const T *qp = headBase<const T>(p.q, p.lay.q, bh, p.heads);
  const T *gp = headBase<const T>(p.dout, p.lay.o, bh, p.heads);

  loadTile<BR, HD, NT, true>(KsT, C::LDR,
                             headBase<const T>(p.k, p.lay.k, bh, p.heads), tk,
                             p.d, p.lay.k.row, k0, p.vecQK);
  loadTile<BR, HD, NT, true>(VsT, C::LDR,
                             headBase<const T>(p.v, p.lay.v, bh, p.heads), tk,
                             p.dvDim, p.lay.v.row, k0, p.vecV);
  float accK[RPT][CPT], accV[RPT][CPT];
#pragma unroll
  for (int r = 0; r < RPT; ++r)
#pragma unroll
    for (int c = 0; c < CPT; ++c)
      accK[r][c] = accV[r][c] = 0.f;

  // Under causal masking queries i < k0 see none of these keys.
  const int64_t qStart = p.causal ? (k0 / BC) * BC : 0;
  for (int64_t q0 = qStart; q0 < tq; q0 += BC) {
    __syncthreads(); // the previous tile's Ps / dSs / Qs / dOs reads are done
    loadTile<BC, HD, NT, true>(QsT, C::LDC, qp, tq, p.d, p.lay.q.row, q0,
                               p.vecQK);
    loadTile<BC, HD, NT, false>(Qs, C::LDH, qp, tq, p.d, p.lay.q.row, q0,
                                p.vecQK);
    loadTile<BC, HD, NT, true>(dOsT, C::LDC, gp, tq, p.dvDim, p.lay.o.row, q0,
                               p.vecV);
    loadTile<BC, HD, NT, false>(dOs, C::LDH, gp, tq, p.dvDim, p.lay.o.row, q0,
                                p.vecV);
    for (int c = tid; c < BC; c += NT) {
      const int64_t i = q0 + c;
      Ls[c] = i < tq ? p.lse[bh * p.tq + i] : 0.f;
      Ds[c] = i < tq ? p.delta[bh * p.tq + i] : 0.f;
    }
    __syncthreads();

    float st[RPT][4], dpt[RPT][4];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        st[r][c] = dpt[r][c] = 0.f;
    mmaKM<RPT, 4, HD, TX>(st, KsT + ty * RPT, C::LDR, QsT, C::LDC, tx);
    mmaKM<RPT, 4, HD, TX>(dpt, VsT + ty * RPT, C::LDR, dOsT, C::LDC, tx);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int64_t i = q0 + tx * 4 + c;
      const float L = Ls[tx * 4 + c], D = Ds[tx * 4 + c];
#pragma unroll
      for (int r = 0; r < RPT; ++r) {
        const int64_t j = k0 + ty * RPT + r;
        float pr = 0.f;
        if (i < tq && j < tk)
          pr = prob(maskScore(p, st[r][c], b, i, j), L);
        st[r][c] = pr;
        dpt[r][c] = pr * (dpt[r][c] - D);
      }
    }
    __syncthreads(); // every thread is done with QsT / dOsT
    storeTransposed<RPT>(Ps, C::LDR, tx, ty, st);
    storeTransposed<RPT>(dSs, C::LDR, tx, ty, dpt);
    __syncthreads();
    mmaKM<RPT, CPT, BC, TX>(accV, Ps + ty * RPT, C::LDR, dOs, C::LDH, tx);
    mmaKM<RPT, CPT, BC, TX>(accK, dSs + ty * RPT, C::LDR, Qs, C::LDH, tx);
  }

#pragma unroll
  for (int r = 0; r < RPT; ++r) {
    const int64_t j = k0 + ty * RPT + r;
    if (j >= tk)
      continue;
    T *krow = headBase<T>(p.dk, p.lay.dk, bh, p.heads) + j * p.lay.dk.row;
    T *vrow = headBase<T>(p.dv, p.lay.dv, bh, p.heads) + j * p.lay.dv.row;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int col = accCol<CPT, TX>(tx, c);
      if (col < p.d)
        krow[col] = fromFloat<T>(accK[r][c] * p.scale);
      if (col < p.dvDim)
        vrow[col] = fromFloat<T>(accV[r][c]);
    }
  }
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

// Per head-dim bucket: registers stay under ~170 and shared memory under
// 128 KB (sm_80 allows 163 KB a block, sm_90 227 KB).
using Fwd32 = Cfg<32, 64, 64, 8>;
using Fwd64 = Cfg<64, 64, 64, 8>;
using Fwd128 = Cfg<128, 64, 64, 8>;
using Dq32 = Cfg<32, 64, 64, 8>;
using Dq64 = Cfg<64, 64, 64, 8>;
using Dq128 = Cfg<128, 64, 32, 4>;
using Dkv32 = Cfg<32, 64, 64, 8>;
using Dkv64 = Cfg<64, 64, 64, 8>;
using Dkv128 = Cfg<128, 32, 32, 2>;

int headBucket(int64_t d, int64_t dv) {
  int64_t hd = d > dv ? d : dv;
  return hd <= 32 ? 32 : hd <= 64 ? 64 : hd <= 128 ? 128 : 0;
}

Status checkShapes(int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv) {
  if (batch < 0 || heads < 0 || tq < 0 || tk < 0 || d < 0 || dv < 0 ||
      headBucket(d, dv) == 0)
    return invalid();
  return 0;
}

/// Whether every row of a (batch, head) pair starts at a multiple of n
/// elements from the base.
bool stridesOf(const kernels::AttentionStrides &s, int64_t n) {
  return s.batch % n == 0 && s.head % n == 0 && s.row % n == 0;
}

/// The tensor cores copy 16-byte pieces of rows: 16-byte aligned tensors
/// whose rows start at multiples of 8 (16-bit) elements.
bool tensorCoresFit(FloatType type, int64_t d, int64_t dv, const void *q,
                    const void *k, const void *v, const void *out,
                    const kernels::AttentionLayout &l) {
  return type != FloatType::F32 && d == dv && (d == 64 || d == 128) &&
         aligned16(q) && aligned16(k) && aligned16(v) && aligned16(out) &&
         stridesOf(l.q, 8) && stridesOf(l.k, 8) && stridesOf(l.v, 8) &&
         stridesOf(l.o, 8);
}

/// The tensor-core backward's conditions: the forward's on q, k, v and
/// dout, and 16-byte aligned gradients.
bool bwdTensorCoresFit(FloatType type, int64_t d, int64_t dv, const void *q,
                       const void *k, const void *v, const void *dout,
                       const void *dq, const void *dk, const void *dvp,
                       const kernels::AttentionLayout &l) {
  return tensorCoresFit(type, d, dv, q, k, v, dout, l) && aligned16(dq) &&
         aligned16(dk) && aligned16(dvp) && stridesOf(l.dq, 8) &&
         stridesOf(l.dk, 8) && stridesOf(l.dv, 8);
}

template <class T> constexpr FloatType typeOf() {
  return std::is_same_v<T, float>           ? FloatType::F32
         : std::is_same_v<T, __nv_bfloat16> ? FloatType::BF16
                                            : FloatType::F16;
}

/// The FMA forward: q, k, v of T, out of TO.
template <class T, class TO>
Status launchFwd(const Params &p, int64_t bh, cudaStream_t stream) {
  auto run = [&](auto cfg) {
    using C = decltype(cfg);
    return launchKernel(attentionFwdKernel<C, T, TO>,
                        bh * ((p.tq + C::BR - 1) / C::BR), C::NT,
                        fwdSmemFloats<C>() * sizeof(float), stream, p);
  };
  switch (headBucket(p.d, p.dvDim)) {
  case 32:
    return run(Fwd32{});
  case 64:
    return run(Fwd64{});
  default:
    return run(Fwd128{});
  }
}

template <class T>
Status launchBwd(const Params &p, int64_t bh, cudaStream_t stream) {
  auto run = [&](auto dqCfg, auto dkvCfg) {
    using Q = decltype(dqCfg);
    using K = decltype(dkvCfg);
    Status st = launchKernel(attentionDqKernel<Q, T>,
                             bh * ((p.tq + Q::BR - 1) / Q::BR), Q::NT,
                             dqSmemFloats<Q>() * sizeof(float), stream, p);
    if (st)
      return st;
    return launchKernel(attentionDkvKernel<K, T>,
                        bh * ((p.tk + K::BR - 1) / K::BR), K::NT,
                        dkvSmemFloats<K>() * sizeof(float), stream, p);
  };
  switch (headBucket(p.d, p.dvDim)) {
  case 32:
    return run(Dq32{}, Dkv32{});
  case 64:
    return run(Dq64{}, Dkv64{});
  default:
    return run(Dq128{}, Dkv128{});
  }
}

Params baseParams(const void *q, const void *k, const void *v, int64_t heads,
                  int64_t tq, int64_t tk, int64_t d, int64_t dv, double scale,
                  bool causal, KeyMask mask,
                  const kernels::AttentionLayout &layout) {
  Params p{};
  p.lay = layout;
  p.q = q;
  p.k = k;
  p.v = v;
  p.keep = mask.keep;
  p.bias = mask.bias;
  p.biasType = mask.biasType;
  p.heads = heads;
  p.tq = tq;
  p.tk = tk;
  p.d = static_cast<int>(d);
  p.dvDim = static_cast<int>(dv);
  p.scale = static_cast<float>(scale);
  p.causal = causal;
  p.vecQK = d % 4 == 0 && aligned16(q) && aligned16(k) &&
            stridesOf(layout.q, 4) && stridesOf(layout.k, 4);
  p.vecV = dv % 4 == 0 && aligned16(v) && stridesOf(layout.v, 4);
  return p;
}

struct BwdWorkspace {
  float *delta, *out, *lse;
  size_t bytes;
};

BwdWorkspace bwdWorkspace(void *base, int64_t batch, int64_t heads,
                          int64_t tq, int64_t dv, bool haveForward) {
  size_t rows = size_t(batch) * size_t(heads) * size_t(tq);
  size_t rowBytes = roundUp256(rows * sizeof(float));
  char *p = static_cast<char *>(base);
  BwdWorkspace w{};
  w.delta = reinterpret_cast<float *>(p);
  w.bytes = rowBytes;
  if (!haveForward) {
    w.lse = reinterpret_cast<float *>(p + w.bytes);
    w.bytes += rowBytes;
    w.out = reinterpret_cast<float *>(p + w.bytes);
    w.bytes += roundUp256(rows * size_t(dv) * sizeof(float));
  }
  return w;
}

template <class T>
Status attentionFwd(const void *q, const void *k, const void *v, void *out,
                    int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                    int64_t d, int64_t dv, double scale, bool causal,
                    KeyMask mask, float *lse, cudaStream_t stream,
                    AttentionPath path, const int32_t *cu,
                    const int32_t *docStart, const int32_t *docEnd,
                    const kernels::AttentionLayout &layout) {
  if (Status st = checkShapes(batch, heads, tq, tk, d, dv))
    return st;
  if (mask.keep && mask.bias)
    return invalid();
  const kernels::AttentionLayout l = layout.resolve(heads, tq, tk, d, dv);
  const bool tc = tensorCoresFit(typeOf<T>(), d, dv, q, k, v, out, l);
  if (path == AttentionPath::TensorCore && !tc)
    return invalid();
  Params p = baseParams(q, k, v, heads, tq, tk, d, dv, scale, causal, mask, l);
  p.cu = cu;
  p.docStart = docStart;
  p.docEnd = docEnd;
  p.o = out;
  p.lseOut = lse;
  p.vecV = p.vecV && aligned16(out) && stridesOf(l.o, 4);
  if constexpr (kIsHalf<T>)
    if (tc && path != AttentionPath::Fma)
      return launchFwdTc<T, T>(p, batch * heads, stream);
  return launchFwd<T, T>(p, batch * heads, stream);
}

template <class T>
Status attentionBwd(const void *q, const void *k, const void *v,
                    const void *dout, void *dq, void *dk, void *dv,
                    int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                    int64_t d, int64_t dvDim, double scale, bool causal,
                    KeyMask mask, const void *out, const float *lse,
                    void *workspace, cudaStream_t stream,
                    AttentionPath path, const int32_t *cu,
                    const int32_t *docStart, const int32_t *docEnd,
                    const kernels::AttentionLayout &layout) {
  if (Status st = checkShapes(batch, heads, tq, tk, d, dvDim))
    return st;
  if ((mask.keep && mask.bias) || (!out) != (!lse))
    return invalid();
  const kernels::AttentionLayout l = layout.resolve(heads, tq, tk, d, dvDim);
  const bool tc = bwdTensorCoresFit(typeOf<T>(), d, dvDim, q, k, v, dout, dq,
                                    dk, dv, l);
  if (path == AttentionPath::TensorCore && !tc)
    return invalid();
  const bool useTc = tc && path != AttentionPath::Fma;
  const int64_t bh = batch * heads;
  if (bh == 0)
    return 0;
  if (tq == 0) {
    // No query reads any key: the key gradients are zero.
    cudaError_t e = cudaMemsetAsync(dk, 0, sizeof(T) * bh * tk * d, stream);
    if (e == cudaSuccess)
      e = cudaMemsetAsync(dv, 0, sizeof(T) * bh * tk * dvDim, stream);
    return static_cast<Status>(e);
  }
  if (!workspace)
    return invalid();
  const bool haveForward = out != nullptr;
  BwdWorkspace w = bwdWorkspace(workspace, batch, heads, tq, dvDim, haveForward);
  Params p = baseParams(q, k, v, heads, tq, tk, d, dvDim, scale, causal, mask,
                        l);
  p.cu = cu;
  p.docStart = docStart;
  p.docEnd = docEnd;
  const unsigned deltaBlocks = static_cast<unsigned>(ceilDiv(bh * tq, 8));
  // The forward's output: the caller's (where the result is, l.o) or the
  // workspace's (heads first).
  kernels::AttentionStrides outStrides = l.o;
  if (!haveForward) {
    // The forward into the workspace, its output in float (unrounded), by
    // the kernel of the path the backward takes.
    Params f = p;
    f.o = w.out;
    f.lay.o = outStrides = kernels::AttentionStrides::headsFirst(heads, tq,
                                                                 dvDim);
    f.lseOut = w.lse;
    Status st = 0;
    if constexpr (kIsHalf<T>)
      st = useTc ? launchFwdTc<T, float>(f, bh, stream)
                 : launchFwd<T, float>(f, bh, stream);
    else
      st = launchFwd<T, float>(f, bh, stream);
    if (st)
      return st;
    attentionDeltaKernel<T, float><<<deltaBlocks, 256, 0, stream>>>(
        static_cast<const T *>(dout), l.o, w.out, outStrides, w.delta,
        bh * tq, heads, tq, static_cast<int>(dvDim));
    out = w.out;
    lse = w.lse;
  } else {
    attentionDeltaKernel<T, T><<<deltaBlocks, 256, 0, stream>>>(
        static_cast<const T *>(dout), l.o, static_cast<const T *>(out),
        outStrides, w.delta, bh * tq, heads, tq, static_cast<int>(dvDim));
  }
  if (Status st = launched())
    return st;
  p.dout = dout;
  p.out = out;
  p.lse = lse;
  p.delta = w.delta;
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.vecV = p.vecV && aligned16(dout) && stridesOf(l.o, 4);
  if constexpr (kIsHalf<T>)
    if (useTc)
      return launchBwdTc<T>(p, bh, stream);
  return launchBwd<T>(p, bh, stream);
}

} // namespace

namespace attn {

Status checkShapes(int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv) {
  return tcc::cuda::checkShapes(batch, heads, tq, tk, d, dv);
}

size_t recomputingBwdWorkspaceBytes(int64_t batch, int64_t heads, int64_t tq,
                                    int64_t dv) {
  return bwdWorkspace(nullptr, batch, heads, tq, dv, false).bytes;
}

Status denseFwd(FloatType type, const void *q, const void *k, const void *v,
                void *out, int64_t batch, int64_t heads, int64_t tq,
                int64_t tk, int64_t d, int64_t dv, double scale, bool causal,
                cudaStream_t stream, AttentionPath path, const int32_t *cu,
                const int32_t *docStart, const int32_t *docEnd,
                const kernels::AttentionLayout &layout) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return attentionFwd<T>(q, k, v, out, batch, heads, tq, tk, d, dv, scale,
                           causal, KeyMask{}, nullptr, stream, path, cu,
                           docStart, docEnd, layout);
  });
}

Status denseBwd(FloatType type, const void *q, const void *k, const void *v,
                const void *dout, void *dq, void *dk, void *dv, int64_t batch,
                int64_t heads, int64_t tq, int64_t tk, int64_t d,
                int64_t dvDim, double scale, bool causal, void *workspace,
                cudaStream_t stream, AttentionPath path, const int32_t *cu,
                const int32_t *docStart, const int32_t *docEnd,
                const kernels::AttentionLayout &layout) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return attentionBwd<T>(q, k, v, dout, dq, dk, dv, batch, heads, tq, tk, d,
                           dvDim, scale, causal, KeyMask{}, nullptr, nullptr,
                           workspace, stream, path, cu, docStart, docEnd,
                           layout);
  });
}

} // namespace attn

bool attention_fwd_uses_tensor_cores(FloatType type, int64_t d, int64_t dv,
                                     const void *q, const void *k,
                                     const void *v, const void *out,
                                     const kernels::AttentionLayout &layout) {
  // Heads first (the default): every stride a multiple of d, as here.
  return tensorCoresFit(type, d, dv, q, k, v, out,
                        layout.resolve(1, 1, 1, d, dv));
}

Status attention_fwd(const float *q, const float *k, const float *v,
                     float *out, int64_t batch, int64_t heads, int64_t tq,
                     int64_t tk, int64_t d, int64_t dv, double scale,
                     bool causal, KeyMask mask, float *lse,
                     cudaStream_t stream) {
  return attentionFwd<float>(q, k, v, out, batch, heads, tq, tk, d, dv, scale,
                             causal, mask, lse, stream, AttentionPath::Fma,
                             nullptr, nullptr, nullptr, {});
}

Status attention_fwd(FloatType type, const void *q, const void *k,
                     const void *v, void *out, int64_t batch, int64_t heads,
                     int64_t tq, int64_t tk, int64_t d, int64_t dv,
                     double scale, bool causal, KeyMask mask, float *lse,
                     cudaStream_t stream, AttentionPath path,
                     const kernels::AttentionLayout &layout) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return attentionFwd<T>(q, k, v, out, batch, heads, tq, tk, d, dv, scale,
                           causal, mask, lse, stream, path, nullptr, nullptr,
                           nullptr, layout);
  });
}

size_t attention_bwd_workspace_bytes(int64_t batch, int64_t heads, int64_t tq,
                                     int64_t tk, int64_t d, int64_t dv,
                                     bool haveForward) {
  (void)tk;
  (void)d;
  if (batch <= 0 || heads <= 0 || tq <= 0)
    return 0;
  return bwdWorkspace(nullptr, batch, heads, tq, dv, haveForward).bytes;
}

Status attention_bwd(const float *q, const float *k, const float *v,
                     const float *dout, float *dq, float *dk, float *dv,
                     int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                     int64_t d, int64_t dvDim, double scale, bool causal,
                     KeyMask mask, const float *out, const float *lse,
                     void *workspace, cudaStream_t stream) {
  return attentionBwd<float>(q, k, v, dout, dq, dk, dv, batch, heads, tq, tk,
                             d, dvDim, scale, causal, mask, out, lse,
                             workspace, stream, AttentionPath::Fma, nullptr,
                             nullptr, nullptr, {});
}

Status attention_bwd(FloatType type, const void *q, const void *k,
                     const void *v, const void *dout, void *dq, void *dk,
                     void *dv, int64_t batch, int64_t heads, int64_t tq,
                     int64_t tk, int64_t d, int64_t dvDim, double scale,
                     bool causal, KeyMask mask, const void *out,
                     const float *lse, void *workspace, cudaStream_t stream,
                     AttentionPath path,
                     const kernels::AttentionLayout &layout) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return attentionBwd<T>(q, k, v, dout, dq, dk, dv, batch, heads, tq, tk, d,
                           dvDim, scale, causal, mask, out, lse, workspace,
                           stream, path, nullptr, nullptr, nullptr, layout);
  });
}

bool attention_bwd_uses_tensor_cores(FloatType type, int64_t d, int64_t dv,
                                     const void *q, const void *k,
                                     const void *v, const void *dout,
                                     const void *dq, const void *dk,
                                     const void *dvp,
                                     const kernels::AttentionLayout &layout) {
  return bwdTensorCoresFit(type, d, dv, q, k, v, dout, dq, dk, dvp,
                           layout.resolve(1, 1, 1, d, dv));
}

} // namespace tcc::cuda
