// Attention, forward and backward, as GEMMs and row softmaxes per (batch,
// head): S = scale * Q K^T (OpenBLAS), the causal and key masks, P =
// softmax(S) by row (softmax_rows), O = P V; the backward recomputes P and
// runs dP = dO V^T, dS = P * (dP - rowsum(P * dP)) * scale, dQ = dS K,
// dK = dS^T Q, dV = P^T dO. Under a causal mask the query rows run in
// blocks, each with the keys its rows can see only (about half the
// products for long sequences; dK and dV add up the blocks' products, so
// their float sums group by block). The (batch, head) pairs are
// independent and run on the worker pool (parallel.h), each written by one
// thread. Packed tokens (pad-skipping) run each (sequence, head) pair on
// its gathered rows. The tensors are read and written by their strides
// (kernels/attention_layout.h); rows that are not contiguous (token rows)
// are gathered per (batch, head) pair, and results scattered back.
//
// Numerics: the GEMMs accumulate in float in OpenBLAS's order, where the
// interpreter (lib/Interp/Attention.h) sums the dot products in double; the
// softmax and its row sums follow softmax_rows (double row sums). Against
// the interpreter the results agree to ~1e-6 relative for the head sizes of
// the test models (test/unit/CpuKernelsTest.cpp states the tolerance).
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace tcc::cpu {
namespace {

/// Query rows per block under a causal mask: block [i0, i1) sees keys
/// [0, i1) only, so the GEMMs skip the keys hidden from all its rows.
int64_t queryBlock(bool causal, int64_t tq) {
  if (!causal)
    return tq;
  return tq <= 256 ? 32 : 64;
}

/// P (rows x w, rows i0 .. i0 + rows - 1, keys 0 .. w - 1) = softmax(scale
/// * q k^T + mask) of one (batch b, head) pair; hidden keys (causal j > i,
/// keep[j] == 0) are -inf before the softmax. `q` points to row i0.
void probs(const float *q, const float *k, int64_t i0, int64_t rows, int64_t w,
           int64_t tk, int64_t d, double scale, bool causal, KeyMask mask,
           int64_t b, float *p) {
  gemm(false, true, 1, rows, w, d, static_cast<float>(scale), q, 0, k, 0, 0.0f,
       p, 0);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    float *row = p + r * w;
    if (causal)
      for (int64_t j = i0 + r + 1; j < w; ++j)
        row[j] = -inf;
    if (mask.keep)
      for (int64_t j = 0; j < w; ++j)
        if (!mask.keep[b * tk + j])
          row[j] = -inf;
    if (mask.bias)
      for (int64_t j = 0; j < w; ++j)
        row[j] += mask.bias[b * tk + j];
  }
  softmax_rows(p, p, rows, w);
}

/// One (batch, head) pair forward: out [tq, dv] = P v; `p` is tq x tk
/// scratch.
void headFwd(const float *q, const float *k, const float *v, float *out,
             int64_t tq, int64_t tk, int64_t d, int64_t dv, double scale,
             bool causal, KeyMask mask, int64_t b, float *p) {
  int64_t block = queryBlock(causal, tq);
  for (int64_t i0 = 0; i0 < tq; i0 += block) {
    int64_t rows = std::min(block, tq - i0);
    int64_t w = causal ? std::min(i0 + rows, tk) : tk;
    probs(q + i0 * d, k, i0, rows, w, tk, d, scale, causal, mask, b, p);
    gemm(false, false, 1, rows, dv, w, 1.0f, p, 0, v, 0, 0.0f, out + i0 * dv,
         0);
  }
}

/// One (batch, head) pair backward; `p` and `ds` are tq x tk scratch.
/// dK and dV sum over the query blocks.
void headBwd(const float *qp, const float *kp, const float *vp, const float *gp,
             float *dq, float *dk, float *dv, int64_t tq, int64_t tk, int64_t d,
             int64_t dvDim, double scale, bool causal, KeyMask mask, int64_t b,
             float *p, float *ds) {
  int64_t block = queryBlock(causal, tq);
  std::fill_n(dk, tk * d, 0.0f);
  std::fill_n(dv, tk * dvDim, 0.0f);
  for (int64_t i0 = 0; i0 < tq; i0 += block) {
    int64_t rows = std::min(block, tq - i0);
    int64_t w = causal ? std::min(i0 + rows, tk) : tk;
    const float *q = qp + i0 * d, *g = gp + i0 * dvDim;
    probs(q, kp, i0, rows, w, tk, d, scale, causal, mask, b, p);
    // dP = dO V^T into ds, then dS = scale * P * (dP - sum_j P dP) by row.
    gemm(false, true, 1, rows, w, dvDim, 1.0f, g, 0, vp, 0, 0.0f, ds, 0);
    for (int64_t i = 0; i < rows; ++i) {
      const float *pr = p + i * w;
      float *sr = ds + i * w;
      double pdp = 0;
      for (int64_t j = 0; j < w; ++j)
        pdp += static_cast<double>(pr[j]) * sr[j];
      const float f = static_cast<float>(pdp), s = static_cast<float>(scale);
      for (int64_t j = 0; j < w; ++j)
        sr[j] = s * (pr[j] * (sr[j] - f));
    }
    gemm(false, false, 1, rows, d, w, 1.0f, ds, 0, kp, 0, 0.0f, dq + i0 * d, 0);
    gemm(true, false, 1, w, d, rows, 1.0f, ds, 0, q, 0, 1.0f, dk, 0);
    gemm(true, false, 1, w, dvDim, rows, 1.0f, p, 0, g, 0, 1.0f, dv, 0);
  }
}

/// One tensor of a (batch, head) pair, `rows` x `dim`: read in place when
/// its rows are contiguous, else gathered into `buf` (or, for a result,
/// computed there and scattered by put()).
struct HeadRows {
  float *base;
  kernels::AttentionStrides s;
  int64_t dim;

  bool dense() const { return s.row == dim; }
  const float *get(int64_t b, int64_t h, int64_t rows,
                   std::vector<float> &buf) const {
    const float *src = base + s.at(b, h, 0);
    if (dense())
      return src;
    buf.resize(size_t(rows * dim));
    for (int64_t t = 0; t < rows; ++t)
      std::copy_n(src + t * s.row, dim, buf.data() + t * dim);
    return buf.data();
  }
  float *out(int64_t b, int64_t h, int64_t rows, std::vector<float> &buf) const {
    if (dense())
      return base + s.at(b, h, 0);
    buf.resize(size_t(rows * dim));
    return buf.data();
  }
  void put(int64_t b, int64_t h, int64_t rows,
           const std::vector<float> &buf) const {
    if (dense())
      return;
    float *dst = base + s.at(b, h, 0);
    for (int64_t t = 0; t < rows; ++t)
      std::copy_n(buf.data() + t * dim, dim, dst + t * s.row);
  }
};

/// Packed tokens: token r of the flattened (batch, seq) order is, for head
/// h, element (r / seq, h, r % seq) of a tensor (by its strides). Sequence
/// s's rows of one head are gathered contiguous, run as one (batch, head)
/// pair and scattered back; the rows of padding are zero.
struct Packed {
  const int32_t *cu;
  int64_t batch, heads, seq, sequences;

  Packed(const KeyMask &m, int64_t batch, int64_t heads, int64_t seq)
      : cu(m.cuSeqlens), batch(batch), heads(heads), seq(seq),
        sequences(m.sequences > 0 ? m.sequences : batch) {}
  int64_t count() const { return cu[sequences]; }
  void gather(const HeadRows &t, int64_t s, int64_t h, float *dst) const {
    for (int64_t r = cu[s]; r < cu[s + 1]; ++r)
      std::copy_n(t.base + t.s.at(r / seq, h, r % seq), t.dim,
                  dst + (r - cu[s]) * t.dim);
  }
  void scatter(const float *src, int64_t s, int64_t h, const HeadRows &t) const {
    for (int64_t r = cu[s]; r < cu[s + 1]; ++r)
      std::copy_n(src + (r - cu[s]) * t.dim, t.dim,
                  t.base + t.s.at(r / seq, h, r % seq));
  }
  void zeroPadding(const HeadRows &t) const {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = count(); r < batch * seq; ++r)
        std::fill_n(t.base + t.s.at(r / seq, h, r % seq), t.dim, 0.0f);
  }
};

/// A tensor's rows by its strides (`p` const only for the inputs).
HeadRows rowsOf(const float *p, kernels::AttentionStrides s, int64_t dim) {
  return {const_cast<float *>(p), s, dim};
}

} // namespace

void attention_fwd(const float *q, const float *k, const float *v, float *out,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv, double scale, bool causal,
                   KeyMask mask, const kernels::AttentionLayout &layout) {
  const kernels::AttentionLayout l = layout.resolve(heads, tq, tk, d, dv);
  const HeadRows Q = rowsOf(q, l.q, d), K = rowsOf(k, l.k, d),
                 V = rowsOf(v, l.v, dv), O = rowsOf(out, l.o, dv);
  if (mask.cuSeqlens) {
    Packed pk(mask, batch, heads, tq);
    pk.zeroPadding(O);
    parallel_for(pk.sequences * heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> qs, ks, vs, os, p;
      for (int64_t sh = begin; sh < end; ++sh) {
        int64_t s = sh / heads, h = sh % heads;
        int64_t len = pk.cu[s + 1] - pk.cu[s];
        if (len == 0)
          continue;
        qs.resize(size_t(len * d)), ks.resize(size_t(len * d));
        vs.resize(size_t(len * dv)), os.resize(size_t(len * dv));
        p.resize(size_t(len * len));
        pk.gather(Q, s, h, qs.data()), pk.gather(K, s, h, ks.data());
        pk.gather(V, s, h, vs.data());
        headFwd(qs.data(), ks.data(), vs.data(), os.data(), len, len, d, dv,
                scale, causal, {}, 0, p.data());
        pk.scatter(os.data(), s, h, O);
      }
    });
    return;
  }
  parallel_for(batch * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(std::size_t(tq * tk)), qs, ks, vs, os;
    for (int64_t bh = begin; bh < end; ++bh) {
      int64_t b = bh / heads, h = bh % heads;
      float *o = O.out(b, h, tq, os);
      headFwd(Q.get(b, h, tq, qs), K.get(b, h, tk, ks), V.get(b, h, tk, vs), o,
              tq, tk, d, dv, scale, causal, mask, b, p.data());
      O.put(b, h, tq, os);
    }
  });
}

void attention_bwd(const float *q, const float *k, const float *v,
                   const float *dout, float *dq, float *dk, float *dv,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dvDim, double scale, bool causal,
                   KeyMask mask, const kernels::AttentionLayout &layout) {
  const kernels::AttentionLayout l = layout.resolve(heads, tq, tk, d, dvDim);
  const HeadRows Q = rowsOf(q, l.q, d), K = rowsOf(k, l.k, d),
                 V = rowsOf(v, l.v, dvDim), G = rowsOf(dout, l.o, dvDim),
                 DQ = rowsOf(dq, l.dq, d), DK = rowsOf(dk, l.dk, d),
                 DV = rowsOf(dv, l.dv, dvDim);
  if (mask.cuSeqlens) {
    Packed pk(mask, batch, heads, tq);
    pk.zeroPadding(DQ), pk.zeroPadding(DK), pk.zeroPadding(DV);
    parallel_for(pk.sequences * heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> qs, ks, vs, gs, dqs, dks, dvs, p, ds;
      for (int64_t sh = begin; sh < end; ++sh) {
        int64_t s = sh / heads, h = sh % heads;
        int64_t len = pk.cu[s + 1] - pk.cu[s];
        if (len == 0)
          continue;
        for (auto *buf : {&qs, &ks, &dqs, &dks})
          buf->resize(size_t(len * d));
        for (auto *buf : {&vs, &gs, &dvs})
          buf->resize(size_t(len * dvDim));
        p.resize(size_t(len * len)), ds.resize(size_t(len * len));
        pk.gather(Q, s, h, qs.data()), pk.gather(K, s, h, ks.data());
        pk.gather(V, s, h, vs.data()), pk.gather(G, s, h, gs.data());
        headBwd(qs.data(), ks.data(), vs.data(), gs.data(), dqs.data(),
                dks.data(), dvs.data(), len, len, d, dvDim, scale, causal, {},
                0, p.data(), ds.data());
        pk.scatter(dqs.data(), s, h, DQ), pk.scatter(dks.data(), s, h, DK);
        pk.scatter(dvs.data(), s, h, DV);
      }
    });
    return;
  }
  parallel_for(batch * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(std::size_t(tq * tk)), ds(std::size_t(tq * tk));
    std::vector<float> qs, ks, vs, gs, dqs, dks, dvs;
    for (int64_t bh = begin; bh < end; ++bh) {
      int64_t b = bh / heads, h = bh % heads;
      float *gq = DQ.out(b, h, tq, dqs), *gk = DK.out(b, h, tk, dks),
            *gv = DV.out(b, h, tk, dvs);
      headBwd(Q.get(b, h, tq, qs), K.get(b, h, tk, ks), V.get(b, h, tk, vs),
              G.get(b, h, tq, gs), gq, gk, gv, tq, tk, d, dvDim, scale,
              causal, mask, b, p.data(), ds.data());
      DQ.put(b, h, tq, dqs), DK.put(b, h, tk, dks), DV.put(b, h, tk, dvs);
    }
  });
}

} // namespace tcc::cpu
