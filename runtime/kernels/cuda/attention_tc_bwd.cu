// Flash attention's backward on tensor cores, for bf16 and f16 storage and
// head dim 64 or 128 (attention_bwd's AttentionPath::Auto takes it where
// the tensor-core forward would run; the FMA backward is attention.cu).
//
// FlashAttention-2's backward with mma.sync.m16n8k16 (16-bit operands, f32
// accumulators), split as the FMA backward is so that no output is reduced
// across blocks (deterministic, no atomics): with the forward's
// log-sum-exp L and delta = rowsum(dO * O) (attention.cu computes both),
//   dQ kernel:  one block of 4 warps per (batch*head, 64 queries), each
//               warp 16 query rows; per tile of BC keys: S = Q K^T and
//               dP = dO V^T on tensor cores, P = exp(mask(S) - L),
//               dS = P (dP - delta) in f32, then dQ += dS K with dS rounded
//               to the storage type (its accumulators are the A fragment);
//   dKV kernel: one block per (batch*head, 64 keys), each warp 16 key rows;
//               per tile of BC queries: S^T = K Q^T, dP^T = V dO^T, then
//               dV += P^T dO and dK += dS^T Q, P and dS rounded likewise.
// dQ and dK are scaled once at the end and rounded once to the storage
// type. Q, K, V and dO tiles are copied as stored (rows padded by 16 bytes,
// so ldmatrix has no bank conflicts) with cp.async; every fragment comes
// from shared memory through ldmatrix (.trans where the tile is the k-major
// operand), so the accumulators alone live in registers.
//
// Masking and NaN follow the FMA backward (attention_common.cuh maskScore,
// prob): hidden keys have P = 0; a query whose L is not finite has NaN
// probabilities, hence NaN gradients.
#include "kernels/cuda/attention_tc.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;
using namespace attn;

/// BR rows owned by a block (queries in dQ, keys in dK/dV), BC columns per
/// step; head dim 128 takes 32 columns per step to keep the accumulators
/// and score tiles of a thread under ~200 registers.
template <int HD_> struct BwdCfg {
  static constexpr int HD = HD_;
  static constexpr int WARPS = 4;
  static constexpr int BR = 16 * WARPS;
  static constexpr int BC = HD == 64 ? 64 : 32;
  static constexpr int NT = 32 * WARPS;
  /// Blocks of the dQ kernel an SM keeps resident (__launch_bounds__):
  /// head dim 64 fits 3 at 168 registers a thread.
  static constexpr int DQ_MIN_BLOCKS = HD == 64 ? 3 : 1;
  static constexpr int LD = HD + 8; ///< shared row stride (elements)
  static constexpr size_t smemBytes() {
    return size_t(2 * BR + 2 * BC) * LD * 2 + 2 * BC * sizeof(float);
  }
};

template <int N> __device__ __forceinline__ void zero(float (&a)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      a[n][c] = 0.f;
}

/// Rows [row0, row0 + 16) of this warp's accumulators (row g in c0, c1,
/// row g + 8 in c2, c3) times `scale`, rounded to T, into dst rows of HD.
template <class T, int HD>
__device__ __forceinline__ void storeRows(T *base, int64_t ld, int64_t nrows,
                                          int64_t row0,
                                          const float (&acc)[HD / 8][4],
                                          float scale, int g, int t4) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t r = row0 + g + 8 * h;
    if (r >= nrows)
      continue;
    T *dst = base + r * ld;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n)
      *reinterpret_cast<uint32_t *>(dst + n * 8 + 2 * t4) =
          pack2<T>(acc[n][2 * h] * scale, acc[n][2 * h + 1] * scale);
  }
}

template <class C, class T>
__global__ void __launch_bounds__(C::NT, C::DQ_MIN_BLOCKS)
    attentionDqTcKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, LD = C::LD, NT = C::NT;
  constexpr int KS = HD / 16; // k-steps over the head dim
  constexpr int SN = BC / 8;  // n-tiles of S and dP (8 keys each)
  constexpr int ON = HD / 8;  // n-tiles of dQ (8 columns each)
  extern __shared__ uint4 smemTc[];
  T *Qs = reinterpret_cast<T *>(smemTc);
  T *dOs = Qs + BR * LD;
  T *Ks = dOs + BR * LD;
  T *Vs = Ks + BC * LD;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4;
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
  copyTileAsync<BR, HD, LD, NT>(
      dOs, headBase<const T>(p.dout, p.lay.o, bh, p.heads), p.lay.o.row, tq,
      q0);
  int64_t row[2];
  float L[2], D[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row[h] = q0 + warp * 16 + g + 8 * h;
    L[h] = row[h] < tq ? backwardLse(p.lse[bh * p.tq + row[h]]) : 0.f;
    D[h] = row[h] < tq ? p.delta[bh * p.tq + row[h]] : 0.f;
  }
  float acc[ON][4];
  zero(acc);

  // Under causal masking no query of this tile sees a key >= q0 + BR.
  const int64_t kEnd = p.causal && q0 + BR < tk ? q0 + BR : tk;
  for (int64_t k0 = firstKeyTile<BC>(p, b, q0); k0 < kEnd; k0 += BC) {
    __syncthreads(); // the previous tile's K / V reads are done
    copyTileAsync<BC, HD, LD, NT>(Ks, kp, p.lay.k.row, tk, k0);
    copyTileAsync<BC, HD, LD, NT>(Vs, vp, p.lay.v.row, tk, k0);
    cpAsyncWait<0>(); // this thread's copies (Q and dO too, the first time)
    __syncthreads();  // everyone's

    float s[SN][4], dp[SN][4];
    zero(s);
    zero(dp);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      uint32_t qa[4], da[4];
      loadA<LD>(qa, Qs, warp * 16, ks * 16, lane);
      loadA<LD>(da, dOs, warp * 16, ks * 16, lane);
#pragma unroll
      for (int np = 0; np < SN / 2; ++np) {
        uint32_t kb[4], vb[4];
        loadBt<LD>(kb, Ks, np * 16, ks * 16, lane);
        mma16816<T>(s[2 * np], qa, kb[0], kb[1]);
        mma16816<T>(s[2 * np + 1], qa, kb[2], kb[3]);
        loadBt<LD>(vb, Vs, np * 16, ks * 16, lane);
        mma16816<T>(dp[2 * np], da, vb[0], vb[1]);
        mma16816<T>(dp[2 * np + 1], da, vb[2], vb[3]);
      }
    }
    if (visibleTile(p, q0, BR, tq, k0, BC, tk)) {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = c / 2;
          const float pr = expf(s[n][c] * p.scale - L[h]); // prob()
          s[n][c] = pr * (dp[n][c] - D[h]);                // dS
        }
    } else {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int64_t j = k0 + n * 8 + 2 * t4 + (c % 2);
          const int h = c / 2;
          const float pr =
              j < tk ? prob(maskScore(p, s[n][c], b, row[h], j), L[h]) : 0.f;
          s[n][c] = pr * (dp[n][c] - D[h]); // dS
        }
    }
    // dQ += dS K: K rows are the k index (keys), its columns the n index.
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      uint32_t a[4];
      accToA<T>(a, s, kk);
#pragma unroll
      for (int np = 0; np < ON / 2; ++np) {
        uint32_t kb[4];
        loadB<LD>(kb, Ks, kk * 16, np * 16, lane);
        mma16816<T>(acc[2 * np], a, kb[0], kb[1]);
        mma16816<T>(acc[2 * np + 1], a, kb[2], kb[3]);
      }
    }
  }
  cpAsyncWait<0>(); // with no key tile the Q / dO copies are still pending
  storeRows<T, HD>(headBase<T>(p.dq, p.lay.dq, bh, p.heads), p.lay.dq.row, tq,
                   q0 + warp * 16, acc, p.scale, g, t4);
}

template <class C, class T>
__global__ void __launch_bounds__(C::NT) attentionDkvTcKernel(Params p) {
  constexpr int HD = C::HD, BR = C::BR, BC = C::BC, LD = C::LD, NT = C::NT;
  constexpr int KS = HD / 16; // k-steps over the head dim
  constexpr int SN = BC / 8;  // n-tiles of S^T and dP^T (8 queries each)
  constexpr int ON = HD / 8;  // n-tiles of dK and dV
  extern __shared__ uint4 smemTc[];
  T *Ks = reinterpret_cast<T *>(smemTc);
  T *Vs = Ks + BR * LD;
  T *Qs = Vs + BR * LD;
  T *dOs = Qs + BC * LD;
  float *Ls = reinterpret_cast<float *>(dOs + BC * LD);
  float *Ds = Ls + BC;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t4 = lane % 4;
  const int64_t tiles = (p.tk + BR - 1) / BR;
  const int64_t bh = blockIdx.x / tiles, k0 = (blockIdx.x % tiles) * BR;
  const int64_t b = bh / p.heads;
  // Rows of this (batch, head): all, or a varlen sequence's (p.cu).
  const int64_t tq = seqRows(p, b, p.tq), tk = seqRows(p, b, p.tk);
  if (k0 >= tk)
    return; // past a varlen sequence's end: no key here
  const T *qp = headBase<const T>(p.q, p.lay.q, bh, p.heads);
  const T *gp = headBase<const T>(p.dout, p.lay.o, bh, p.heads);

  copyTileAsync<BR, HD, LD, NT>(
      Ks, headBase<const T>(p.k, p.lay.k, bh, p.heads), p.lay.k.row, tk, k0);
  copyTileAsync<BR, HD, LD, NT>(
      Vs, headBase<const T>(p.v, p.lay.v, bh, p.heads), p.lay.v.row, tk, k0);
  int64_t key[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    key[h] = k0 + warp * 16 + g + 8 * h;
  float accK[ON][4], accV[ON][4];
  zero(accK);
  zero(accV);

  // Under causal masking queries i < k0 see none of these keys.
  const int64_t qStart = p.causal ? (k0 / BC) * BC : 0;
  for (int64_t q0 = qStart; q0 < tq; q0 += BC) {
    __syncthreads(); // the previous tile's Q / dO / L / delta reads are done
    copyTileAsync<BC, HD, LD, NT>(Qs, qp, p.lay.q.row, tq, q0);
    copyTileAsync<BC, HD, LD, NT>(dOs, gp, p.lay.o.row, tq, q0);
    for (int c = threadIdx.x; c < BC; c += NT) {
      const int64_t i = q0 + c;
      Ls[c] = i < tq ? backwardLse(p.lse[bh * p.tq + i]) : 0.f;
      Ds[c] = i < tq ? p.delta[bh * p.tq + i] : 0.f;
    }
    cpAsyncWait<0>();
    __syncthreads();

    float st[SN][4], dpt[SN][4];
    zero(st);
    zero(dpt);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      uint32_t ka[4], va[4];
      loadA<LD>(ka, Ks, warp * 16, ks * 16, lane);
      loadA<LD>(va, Vs, warp * 16, ks * 16, lane);
#pragma unroll
      for (int np = 0; np < SN / 2; ++np) {
        uint32_t qb[4], db[4];
        loadBt<LD>(qb, Qs, np * 16, ks * 16, lane);
        mma16816<T>(st[2 * np], ka, qb[0], qb[1]);
        mma16816<T>(st[2 * np + 1], ka, qb[2], qb[3]);
        loadBt<LD>(db, dOs, np * 16, ks * 16, lane);
        mma16816<T>(dpt[2 * np], va, db[0], db[1]);
        mma16816<T>(dpt[2 * np + 1], va, db[2], db[3]);
      }
    }
    // Queries [q0, q0 + BC) against this block's keys [k0, k0 + BR).
    if (visibleTile(p, q0, BC, tq, k0, BR, tk)) {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int col = n * 8 + 2 * t4 + (c % 2);
          const float pr = expf(st[n][c] * p.scale - Ls[col]); // prob()
          st[n][c] = pr;                                        // P^T
          dpt[n][c] = pr * (dpt[n][c] - Ds[col]);               // dS^T
        }
    } else {
#pragma unroll
      for (int n = 0; n < SN; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int col = n * 8 + 2 * t4 + (c % 2);
          const int64_t i = q0 + col, j = key[c / 2];
          float pr = 0.f;
          if (i < tq && j < tk)
            pr = prob(maskScore(p, st[n][c], b, i, j), Ls[col]);
          st[n][c] = pr;                          // P^T
          dpt[n][c] = pr * (dpt[n][c] - Ds[col]); // dS^T
        }
    }
    // dV += P^T dO and dK += dS^T Q: dO and Q rows are the k index.
#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      uint32_t pa[4], sa[4];
      accToA<T>(pa, st, kk);
      accToA<T>(sa, dpt, kk);
#pragma unroll
      for (int np = 0; np < ON / 2; ++np) {
        uint32_t db[4], qb[4];
        loadB<LD>(db, dOs, kk * 16, np * 16, lane);
        mma16816<T>(accV[2 * np], pa, db[0], db[1]);
        mma16816<T>(accV[2 * np + 1], pa, db[2], db[3]);
        loadB<LD>(qb, Qs, kk * 16, np * 16, lane);
        mma16816<T>(accK[2 * np], sa, qb[0], qb[1]);
        mma16816<T>(accK[2 * np + 1], sa, qb[2], qb[3]);
      }
    }
  }
  cpAsyncWait<0>(); // with no query tile the K / V copies are still pending
  storeRows<T, HD>(headBase<T>(p.dk, p.lay.dk, bh, p.heads), p.lay.dk.row, tk,
                   k0 + warp * 16, accK, p.scale, g, t4);
  storeRows<T, HD>(headBase<T>(p.dv, p.lay.dv, bh, p.heads), p.lay.dv.row, tk,
                   k0 + warp * 16, accV, 1.f, g, t4);
}

} // namespace

namespace attn {

template <class T>
Status launchBwdTc(const Params &p, int64_t bh, cudaStream_t stream) {
  auto run = [&](auto cfg) {
    using C = decltype(cfg);
    Status st = launchKernel(attentionDqTcKernel<C, T>,
                             bh * ((p.tq + C::BR - 1) / C::BR), C::NT,
                             C::smemBytes(), stream, p);
    if (st)
      return st;
    return launchKernel(attentionDkvTcKernel<C, T>,
                        bh * ((p.tk + C::BR - 1) / C::BR), C::NT,
                        C::smemBytes(), stream, p);
  };
  return p.d == 64 ? run(BwdCfg<64>{}) : run(BwdCfg<128>{});
}

template Status launchBwdTc<__nv_bfloat16>(const Params &, int64_t,
                                           cudaStream_t);
template Status launchBwdTc<__half>(const Params &, int64_t, cudaStream_t);

} // namespace attn
} // namespace tcc::cuda
