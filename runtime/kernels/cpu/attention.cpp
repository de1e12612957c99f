// Attention, forward and backward, as GEMMs and row softmaxes per (batch,
// head): S = scale * Q K^T (OpenBLAS), the causal and key masks, P =
// softmax(S) by row (softmax_rows), O = P V; the backward recomputes P and
// runs dP = dO V^T, dS = P * (dP - rowsum(P * dP)) * scale, dQ = dS K,
// dK = dS^T Q, dV = P^T dO. The (batch, head) pairs are independent and run
// on the worker pool (parallel.h), each written by one thread.
//
// Numerics: the GEMMs accumulate in float in OpenBLAS's order, where the
// interpreter (lib/Interp/Attention.h) sums the dot products in double; the
// softmax and its row sums follow softmax_rows (double row sums). Against
// the interpreter the results agree to ~1e-6 relative for the head sizes of
// the test models (test/unit/CpuKernelsTest.cpp states the tolerance).
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

#include <cstddef>
#include <limits>
#include <vector>

namespace tcc::cpu {
namespace {

/// P (tq x tk) = softmax(scale * q k^T + mask) of one (batch b, head) pair;
/// hidden keys (causal j > i, keep[j] == 0) are -inf before the softmax.
void probs(const float *q, const float *k, int64_t tq, int64_t tk, int64_t d,
           double scale, bool causal, KeyMask mask, int64_t b, float *p) {
  gemm(false, true, 1, tq, tk, d, static_cast<float>(scale), q, 0, k, 0, 0.0f,
       p, 0);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < tq; ++i) {
    float *row = p + i * tk;
    if (causal)
      for (int64_t j = i + 1; j < tk; ++j)
        row[j] = -inf;
    if (mask.keep)
      for (int64_t j = 0; j < tk; ++j)
        if (!mask.keep[b * tk + j])
          row[j] = -inf;
    if (mask.bias)
      for (int64_t j = 0; j < tk; ++j)
        row[j] += mask.bias[b * tk + j];
  }
  softmax_rows(p, p, tq, tk);
}

} // namespace

void attention_fwd(const float *q, const float *k, const float *v, float *out,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv, double scale, bool causal,
                   KeyMask mask) {
  parallel_for(batch * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(std::size_t(tq * tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      probs(q + bh * tq * d, k + bh * tk * d, tq, tk, d, scale, causal, mask,
            bh / heads, p.data());
      gemm(false, false, 1, tq, dv, tk, 1.0f, p.data(), 0, v + bh * tk * dv, 0,
           0.0f, out + bh * tq * dv, 0);
    }
  });
}

void attention_bwd(const float *q, const float *k, const float *v,
                   const float *dout, float *dq, float *dk, float *dv,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dvDim, double scale, bool causal,
                   KeyMask mask) {
  parallel_for(batch * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> p(std::size_t(tq * tk)), ds(std::size_t(tq * tk));
    for (int64_t bh = begin; bh < end; ++bh) {
      const float *qp = q + bh * tq * d, *kp = k + bh * tk * d;
      const float *vp = v + bh * tk * dvDim, *gp = dout + bh * tq * dvDim;
      probs(qp, kp, tq, tk, d, scale, causal, mask, bh / heads, p.data());
      // dP = dO V^T into ds, then dS = scale * P * (dP - sum_j P dP) by row.
      gemm(false, true, 1, tq, tk, dvDim, 1.0f, gp, 0, vp, 0, 0.0f, ds.data(),
           0);
      for (int64_t i = 0; i < tq; ++i) {
        const float *pr = p.data() + i * tk;
        float *sr = ds.data() + i * tk;
        double pdp = 0;
        for (int64_t j = 0; j < tk; ++j)
          pdp += static_cast<double>(pr[j]) * sr[j];
        const float f = static_cast<float>(pdp), s = static_cast<float>(scale);
        for (int64_t j = 0; j < tk; ++j)
          sr[j] = s * (pr[j] * (sr[j] - f));
      }
      gemm(false, false, 1, tq, d, tk, 1.0f, ds.data(), 0, kp, 0, 0.0f,
           dq + bh * tq * d, 0);
      gemm(true, false, 1, tk, d, tq, 1.0f, ds.data(), 0, qp, 0, 0.0f,
           dk + bh * tk * d, 0);
      gemm(true, false, 1, tk, dvDim, tq, 1.0f, p.data(), 0, gp, 0, 0.0f,
           dv + bh * tk * dvDim, 0);
    }
  });
}

} // namespace tcc::cpu
