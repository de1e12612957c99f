// Flash attention's forward on tensor cores, for bf16 and f16 storage and
// head dim 64 or 128 (attention_fwd's AttentionPath::Auto takes it where
// tensorCoresFit holds; the FMA kernels are attention.cu, the tensor-core
// backward attention_tc_bwd.cu, the shared pieces attention_tc.cuh).
//
// FlashAttention-2's forward with mma.sync.m16n8k16 (16-bit operands, f32
// accumulators): one block of 4 warps per (batch*head, 64 queries), each
// warp owning 16 query rows. Q, K and V tiles are copied into shared memory
// as stored (16-bit, rows padded by 16 bytes so ldmatrix is free of bank
// conflicts) with cp.async, V's copy overlapping the scores; each warp
// keeps its Q fragments in registers. Per tile of 64 keys: S = Q K^T
// (ldmatrix of K rows is the col-major B operand), the CPU kernel's masking
// per score, the online softmax in f32 over the 4 lanes of a quad that
// share a row (running max m and sum l, the output rescaled by
// exp(m_old - m_new)), then O += P V with P rounded to the storage type
// straight from the S accumulators (their layout is the A operand's) and V
// through ldmatrix.trans; l sums the rounded P, so a row's weights still
// sum to 1. The output is divided by l and rounded once; lse = m + log(l)
// stays f32.
#include "kernels/cuda/attention_tc.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;
using namespace attn;

/// T: how q, k, v are stored; TO: how out is (T, or float for the
/// backward's recomputation into its workspace).
template <class C, class T, class TO>
__global__ void __launch_bounds__(C::NT, C::MIN_BLOCKS)
    attentionFwdTcKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, LD = C::LD, NT = C::NT;
  constexpr int KS = HD / 16; // k-steps of S = Q K^T
  constexpr int SN = BC / 8;  // n-tiles of S (8 keys each)
  constexpr int ON = HD / 8;  // n-tiles of O (8 columns each)
  extern __shared__ uint4 smemTc[];
  T *Qs = reinterpret_cast<T *>(smemTc);
  T *Ks = Qs + BR * LD;
  T *Vs = Ks + BC * LD;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4; // fragment row group / column pair
  const int lm = lane / 8, lr = lane % 8; // ldmatrix: matrix and row of lane
  const int64_t tiles = (p.tq + BR - 1) / BR;
  const int64_t bh = blockIdx.x / tiles, q0 = (blockIdx.x % tiles) * BR;
  const int64_t b = bh / p.heads;
  // Rows of this (batch, head): all, or a varlen sequence's (p.cu).
  const int64_t tq = seqRows(p, b, p.tq), tk = seqRows(p, b, p.tk);
  if (q0 >= tq)
    return; // past a varlen sequence's end: no query here
  const T *kp = headBase<const T>(p.k, p.lay.k, bh, p.heads);
  const T *vp = headBase<const T>(p.v, p.lay.v, bh, p.heads);

  copyTileAsync<BR, HD, LD, NT>(
      Qs, headBase<const T>(p.q, p.lay.q, bh, p.heads), p.lay.q.row, tq, q0);
  cpAsyncWait<0>();
  __syncthreads();
  // This warp's 16 query rows as A fragments, one per k-step: matrices
  // (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15).
  uint32_t qf[KS][4];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
    ldmatrixX4<false>(qf[ks], Qs + (warp * 16 + lr + (lm % 2) * 8) * LD +
                                  ks * 16 + (lm / 2) * 8);

  float o[ON][4], m[2], l[2];
#pragma unroll
  for (int n = 0; n < ON; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      o[n][c] = 0.f;
  // Accumulator element c of a tile is in row g (c < 2) or g + 8.
  int64_t row[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.f;
    row[h] = q0 + warp * 16 + g + h * 8;
  }

  const int64_t kEnd = p.causal && q0 + BR < tk ? q0 + BR : tk;
  int64_t k0 = firstKeyTile<BC>(p, b, q0);
  // Tile t's K copy overlaps tile t-1's P V, its V copy tile t's scores.
  if (k0 < kEnd) {
    copyTileAsync<BC, HD, LD, NT>(Ks, kp, p.lay.k.row, tk, k0);
    copyTileAsync<BC, HD, LD, NT>(Vs, vp, p.lay.v.row, tk, k0);
  }
  for (; k0 < kEnd; k0 += BC) {
    const bool more = k0 + BC < kEnd;
    cpAsyncWait<1>(); // this thread's K copies (V's may be pending)
    __syncthreads();  // everyone's

    // S = Q K^T: the B operand of keys n0..n0+7 is K rows n0.. (k = head
    // dim, contiguous): matrices (keys 0-7, cols 0-7), (0-7, 8-15),
    // (8-15, 0-7), (8-15, 8-15) give two n-tiles.
    float s[SN][4];
#pragma unroll
    for (int n = 0; n < SN; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        s[n][c] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int np = 0; np < SN / 2; ++np) {
        uint32_t kb[4];
        ldmatrixX4<false>(kb, Ks + (np * 16 + lr + (lm / 2) * 8) * LD +
                                  ks * 16 + (lm % 2) * 8);
        mma16816<T>(s[2 * np], qf[ks], kb[0], kb[1]);
        mma16816<T>(s[2 * np + 1], qf[ks], kb[2], kb[3]);
      }

    // (Query rows past tq are computed and dropped: no bound on them.)
    if (visibleTile(p, q0, 0, tq, k0, BC, tk)) {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          s[n][c] *= p.scale; // maskScore of a visible key
    } else {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int64_t j = k0 + n * 8 + 2 * t4 + (c % 2);
          s[n][c] = j < tk ? maskScore(p, s[n][c], b, row[c / 2], j)
                           : -INFINITY;
        }
    }

    // Online softmax per row; the quad's 4 lanes hold a row's 64 scores.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < SN; ++n)
        mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
      const float mNew = fmaxf(m[h], mx);
      // Nothing seen yet (m = -inf): the accumulator is 0, drop it.
      const float alpha = m[h] == -INFINITY ? 0.f : expf(m[h] - mNew);
      m[h] = mNew;
      const float mLog2 = mNew * kLog2e;
      float ls = 0.f;
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 2 * h; c < 2 * h + 2; ++c) {
          // A NaN score stays NaN and poisons l and the row's output. P is
          // rounded to T here, so l sums the weights V is multiplied by.
          const float e = s[n][c] == -INFINITY
                              ? 0.f
                              : exp2f(fmaf(s[n][c], kLog2e, -mLog2));
          s[n][c] = toFloat(fromFloat<T>(e));
          ls += s[n][c];
        }
      l[h] = l[h] * alpha + ls;
#pragma unroll
      for (int n = 0; n < ON; ++n) {
        o[n][2 * h] *= alpha;
        o[n][2 * h + 1] *= alpha;
      }
    }

    cpAsyncWait<0>(); // this thread's V copies
    __syncthreads();  // everyone's; every warp is done with this K tile
    if (more)
      copyTileAsync<BC, HD, LD, NT>(Ks, kp, p.lay.k.row, tk, k0 + BC);
    // O += P V: P's A fragment for keys 16 kk.. is the accumulators of
    // n-tiles 2 kk and 2 kk + 1, rounded to T; V's B fragments come from
    // ldmatrix.trans of V rows (keys) - matrices (keys 0-7, cols 0-7),
    // (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) give two n-tiles of O.
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      const uint32_t pa[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                              pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                              pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < ON / 2; ++np) {
        uint32_t vb[4];
        ldmatrixX4<true>(vb, Vs + (kk * 16 + lr + (lm % 2) * 8) * LD +
                                 np * 16 + (lm / 2) * 8);
        mma16816<T>(o[2 * np], pa, vb[0], vb[1]);
        mma16816<T>(o[2 * np + 1], pa, vb[2], vb[3]);
      }
    }
    if (more) {
      __syncthreads(); // every warp is done with this V tile
      copyTileAsync<BC, HD, LD, NT>(Vs, vp, p.lay.v.row, tk, k0 + BC);
    }
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float total = l[h];
    total += __shfl_xor_sync(kFullMask, total, 1);
    total += __shfl_xor_sync(kFullMask, total, 2);
    if (row[h] >= tq)
      continue;
    TO *orow = headBase<TO>(p.o, p.lay.o, bh, p.heads) + row[h] * p.lay.o.row;
#pragma unroll
    for (int n = 0; n < ON; ++n) {
      const float a = tk == 0 ? 0.f : o[n][2 * h] / total;
      const float c = tk == 0 ? 0.f : o[n][2 * h + 1] / total;
      if constexpr (std::is_same_v<TO, float>)
        *reinterpret_cast<float2 *>(orow + n * 8 + 2 * t4) = make_float2(a, c);
      else
        *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * t4) = pack2<T>(a, c);
    }
    if (p.lseOut && t4 == 0)
      p.lseOut[bh * p.tq + row[h]] = m[h] + logf(total);
  }
}

} // namespace

namespace attn {

template <class T, class TO>
Status launchFwdTc(const Params &p, int64_t bh, cudaStream_t stream) {
  auto run = [&](auto cfg) {
    using C = decltype(cfg);
    return launchKernel(attentionFwdTcKernel<C, T, TO>,
                        bh * ((p.tq + C::BR - 1) / C::BR), C::NT,
                        C::smemBytes(), stream, p);
  };
  return p.d == 64 ? run(TcCfg<64>{}) : run(TcCfg<128>{});
}

template Status launchFwdTc<__nv_bfloat16, __nv_bfloat16>(const Params &,
                                                          int64_t, cudaStream_t);
template Status launchFwdTc<__half, __half>(const Params &, int64_t,
                                            cudaStream_t);
template Status launchFwdTc<__nv_bfloat16, float>(const Params &, int64_t,
                                                  cudaStream_t);
template Status launchFwdTc<__half, float>(const Params &, int64_t,
                                           cudaStream_t);

} // namespace attn
} // namespace tcc::cuda
