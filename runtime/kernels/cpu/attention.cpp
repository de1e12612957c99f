// Reference attention, forward and backward, with the interpreter's
// arithmetic (lib/Interp/Attention.h, Contract.cpp, Grad.cpp): one row of
// scores per query, dot products in double, the forward's scores and
// softmax in float (as a float32 kernel's) and the backward's in double.
// The flash-style kernels will replace this on the hot path; this one is
// the CPU backend's baseline and its oracle.
#include "kernels/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tcc::cpu {
namespace {

/// In-place softmax of p[0, n) in S, with the interpreter's rules: an all
/// -inf or NaN-containing row becomes NaN.
template <class S> void softmaxInPlace(S *p, int64_t n) {
  S m = -std::numeric_limits<S>::infinity();
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) {
    nan |= std::isnan(p[j]);
    m = p[j] > m ? p[j] : m;
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    S e = nan ? std::numeric_limits<S>::quiet_NaN() : std::exp(p[j] - m);
    p[j] = e;
    sum += e;
  }
  S total = static_cast<S>(sum);
  for (int64_t j = 0; j < n; ++j)
    p[j] /= total;
}

/// p[j] = softmax_j(scale * q.k_j + mask) for query i of batch b; hidden
/// keys (causal j > i, keep[j] == 0) are -inf before the softmax.
template <class S>
void probs(const float *query, const float *keys, int64_t tk, int64_t d,
           double scale, bool causal, KeyMask mask, int64_t b, int64_t i,
           S *p) {
  const S inf = std::numeric_limits<S>::infinity();
  for (int64_t j = 0; j < tk; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < d; ++e)
      dot += static_cast<double>(query[e]) * keys[j * d + e];
    p[j] = static_cast<S>(scale * dot);
    if (causal && j > i)
      p[j] = -inf;
    if (mask.keep && !mask.keep[b * tk + j])
      p[j] = -inf;
    if (mask.bias)
      p[j] += mask.bias[b * tk + j];
  }
  softmaxInPlace(p, tk);
}

} // namespace

void attention_fwd(const float *q, const float *k, const float *v, float *out,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv, double scale, bool causal,
                   KeyMask mask) {
  std::vector<float> p(tk);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t bh = b * heads + h;
      const float *qp = q + bh * tq * d, *kp = k + bh * tk * d;
      const float *vp = v + bh * tk * dv;
      float *po = out + bh * tq * dv;
      for (int64_t i = 0; i < tq; ++i) {
        probs(qp + i * d, kp, tk, d, scale, causal, mask, b, i, p.data());
        for (int64_t e = 0; e < dv; ++e) {
          double sum = 0;
          for (int64_t j = 0; j < tk; ++j)
            sum += static_cast<double>(p[j]) * vp[j * dv + e];
          po[i * dv + e] = static_cast<float>(sum);
        }
      }
    }
}

void attention_bwd(const float *q, const float *k, const float *v,
                   const float *dout, float *dq, float *dk, float *dv,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dvDim, double scale, bool causal,
                   KeyMask mask) {
  std::vector<double> p(tk), dp(tk), dkAcc(tk * d), dvAcc(tk * dvDim);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t bh = b * heads + h;
      const float *qp = q + bh * tq * d, *kp = k + bh * tk * d;
      const float *vp = v + bh * tk * dvDim, *gp = dout + bh * tq * dvDim;
      float *dqp = dq + bh * tq * d;
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
      for (int64_t i = 0; i < tq; ++i) {
        probs(qp + i * d, kp, tk, d, scale, causal, mask, b, i, p.data());
        // dp_j = do . v_j; pdp = sum_j p_j dp_j; dv_j += p_j do.
        double pdp = 0;
        for (int64_t j = 0; j < tk; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < dvDim; ++e) {
            dot += static_cast<double>(gp[i * dvDim + e]) * vp[j * dvDim + e];
            dvAcc[j * dvDim + e] += p[j] * gp[i * dvDim + e];
          }
          dp[j] = dot;
          pdp += p[j] * dot;
        }
        for (int64_t e = 0; e < d; ++e) {
          double sum = 0;
          for (int64_t j = 0; j < tk; ++j)
            sum += p[j] * (dp[j] - pdp) * kp[j * d + e];
          dqp[i * d + e] = static_cast<float>(scale * sum);
        }
        for (int64_t j = 0; j < tk; ++j) {
          double ds = scale * p[j] * (dp[j] - pdp);
          for (int64_t e = 0; e < d; ++e)
            dkAcc[j * d + e] += ds * qp[i * d + e];
        }
      }
      float *dkp = dk + bh * tk * d, *dvp = dv + bh * tk * dvDim;
      for (int64_t e = 0; e < tk * d; ++e)
        dkp[e] = static_cast<float>(dkAcc[e]);
      for (int64_t e = 0; e < tk * dvDim; ++e)
        dvp[e] = static_cast<float>(dvAcc[e]);
    }
}

} // namespace tcc::cpu
