// Float64 host references of the GPU tests (GpuKernelsTest, GpuHalfTest):
// softmax rows and their gradient, layer norm (forward and backward),
// attention (forward and backward) with the CPU kernels' masking and NaN
// rules, and cross-entropy, computed in double from the float inputs.
#ifndef TCC_TEST_UNIT_GPU_GPUREFERENCE_H
#define TCC_TEST_UNIT_GPU_GPUREFERENCE_H

#include "GpuTestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tcc::gputest {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Double softmax / log_softmax of one row with the CPU kernels' NaN rules.
inline std::vector<double> refSoftmaxRow(const float *x, int64_t len, bool log) {
  std::vector<double> y(len);
  double m = -kInf;
  bool nan = false;
  for (int64_t j = 0; j < len; ++j) {
    nan |= std::isnan(x[j]);
    if (!std::isnan(x[j]))
      m = std::max(m, double(x[j]));
  }
  if (nan || std::isinf(m)) {
    std::fill(y.begin(), y.end(), kNaN);
    return y;
  }
  double s = 0;
  for (int64_t j = 0; j < len; ++j)
    s += std::exp(double(x[j]) - m);
  for (int64_t j = 0; j < len; ++j)
    y[j] = log ? double(x[j]) - m - std::log(s) : std::exp(double(x[j]) - m) / s;
  return y;
}

/// Rows of `len` elements; `offset` elements of misalignment of every
/// buffer.
struct RowShape {
  int64_t rows, len;
  size_t offset;
};

/// The layer norm shapes: one row, odd lengths, many short rows, long rows
/// over several passes, a misaligned case.
inline constexpr RowShape kNormShapes[] = {
    {1, 1, 0},    {7, 33, 0},    {64, 768, 0}, {130, 64, 0},
    {3, 3000, 0}, {1000, 16, 0}, {40, 128, 1}, {300, 2500, 0},
};

/// Double gradient of softmax (`log`: log_softmax) rows of `len` given the
/// forward's output y and the output gradient g.
inline std::vector<double> refSoftmaxGradRows(const std::vector<float> &y,
                                              const std::vector<float> &g,
                                              int64_t rows, int64_t len,
                                              bool log) {
  std::vector<double> ref(y.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += log ? double(g[r * len + j])
                 : double(g[r * len + j]) * y[r * len + j];
    for (int64_t j = 0; j < len; ++j) {
      size_t i = r * len + j;
      ref[i] = log ? g[i] - std::exp(double(y[i])) * sum
                   : double(y[i]) * (g[i] - sum);
    }
  }
  return ref;
}

/// Double layer norm of rows of `len` (two-pass statistics); `scale` and
/// `bias` (of len) may be null.
struct LayerNormRef {
  std::vector<double> y, mean, rstd;
};

inline LayerNormRef refLayerNormFwd(const std::vector<float> &x,
                                    const float *scale, const float *bias,
                                    int64_t rows, int64_t len, double eps) {
  LayerNormRef ref;
  ref.y.resize(x.size());
  ref.mean.resize(rows);
  ref.rstd.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += x[r * len + j];
    double mean = sum / len;
    for (int64_t j = 0; j < len; ++j)
      sq += (x[r * len + j] - mean) * (x[r * len + j] - mean);
    double rstd = 1 / std::sqrt(sq / len + eps);
    ref.mean[r] = mean;
    ref.rstd[r] = rstd;
    for (int64_t j = 0; j < len; ++j) {
      double v = (x[r * len + j] - mean) * rstd;
      if (scale)
        v *= scale[j];
      if (bias)
        v += bias[j];
      ref.y[r * len + j] = v;
    }
  }
  return ref;
}

/// Double dx, dscale and dbias of layer norm given the output gradient g;
/// `scale` may be null, and `mean` / `rstd` (the forward's, of rows) too:
/// then they are computed here.
struct LayerNormGradRef {
  std::vector<double> dx, dscale, dbias, dxsum; ///< dxsum: dx's column sums
};

inline LayerNormGradRef refLayerNormBwd(const std::vector<float> &x,
                                        const std::vector<float> &g,
                                        const float *scale, const float *mean,
                                        const float *rstd, int64_t rows,
                                        int64_t len, double eps,
                                        const float *residual = nullptr) {
  LayerNormGradRef ref;
  ref.dx.resize(x.size());
  ref.dscale.assign(len, 0.0);
  ref.dbias.assign(len, 0.0);
  ref.dxsum.assign(len, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mu, rs;
    if (mean) {
      mu = mean[r];
      rs = rstd[r];
    } else {
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < len; ++j)
        sum += x[r * len + j];
      mu = sum / len;
      for (int64_t j = 0; j < len; ++j)
        sq += (x[r * len + j] - mu) * (x[r * len + j] - mu);
      rs = 1 / std::sqrt(sq / len + eps);
    }
    double a = 0, b = 0;
    for (int64_t j = 0; j < len; ++j) {
      size_t i = r * len + j;
      double xhat = (x[i] - mu) * rs;
      double dxhat = double(g[i]) * (scale ? scale[j] : 1.0);
      a += dxhat;
      b += dxhat * xhat;
      ref.dscale[j] += g[i] * xhat;
      ref.dbias[j] += g[i];
    }
    a /= len;
    b /= len;
    for (int64_t j = 0; j < len; ++j) {
      size_t i = r * len + j;
      double xhat = (x[i] - mu) * rs;
      double dxhat = double(g[i]) * (scale ? scale[j] : 1.0);
      ref.dx[i] = rs * (dxhat - a - xhat * b) + (residual ? residual[i] : 0.0);
      ref.dxsum[j] += ref.dx[i];
    }
  }
  return ref;
}

struct AttnShape {
  int64_t b, h, tq, tk, d, dv;
  bool causal;
  int mask; // 0 none, 1 keep (i1), 2 additive bias
};

struct AttnData {
  AttnShape s;
  std::vector<float> q, k, v, g, bias;
  std::vector<uint8_t> keep;
  double scale;
};

inline AttnData makeAttn(const AttnShape &s, uint32_t seed) {
  AttnData a;
  a.s = s;
  a.q = randomNormal(s.b * s.h * s.tq * s.d, seed);
  a.k = randomNormal(s.b * s.h * s.tk * s.d, seed + 1);
  a.v = randomNormal(s.b * s.h * s.tk * s.dv, seed + 2);
  a.g = randomNormal(s.b * s.h * s.tq * s.dv, seed + 3);
  a.scale = 1.0 / std::sqrt(double(s.d));
  std::mt19937 rng(seed + 4);
  if (s.mask == 1) {
    a.keep.resize(s.b * s.tk);
    for (auto &m : a.keep)
      m = rng() % 4 != 0;
    // Causal: key 0 stays visible, so no query has every key hidden.
    for (int64_t b = 0; s.causal && b < s.b; ++b)
      a.keep[b * s.tk] = 1;
    // Batch 0: all keys but one hidden (key 0 under causal, so every query
    // still sees it; else the last).
    for (int64_t j = 0; j < s.tk; ++j)
      a.keep[j] = j == (s.causal ? 0 : s.tk - 1);
  } else if (s.mask == 2) {
    a.bias = randomNormal(s.b * s.tk, seed + 5, 2.0f);
    // Some hidden keys; key 0 stays visible (causal query 0 sees only it).
    for (int64_t j = 1; j < s.tk; j += 5)
      a.bias[j] = -INFINITY;
  }
  return a;
}

/// Double forward and backward (dq, dk, dv) of attention with the CPU
/// kernel's masking; a query with every key hidden is NaN (its p all NaN).
struct AttnRef {
  std::vector<double> out, lse, dq, dk, dv;
};

inline AttnRef refAttention(const AttnData &a) {
  const AttnShape &s = a.s;
  AttnRef r;
  r.out.assign(s.b * s.h * s.tq * s.dv, 0);
  r.lse.assign(s.b * s.h * s.tq, 0);
  r.dq.assign(s.b * s.h * s.tq * s.d, 0);
  r.dk.assign(s.b * s.h * s.tk * s.d, 0);
  r.dv.assign(s.b * s.h * s.tk * s.dv, 0);
  std::vector<double> p(s.tk), dp(s.tk);
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t h = 0; h < s.h; ++h) {
      int64_t bh = b * s.h + h;
      for (int64_t i = 0; i < s.tq; ++i) {
        const float *qi = &a.q[(bh * s.tq + i) * s.d];
        double m = -kInf;
        bool nan = false;
        for (int64_t j = 0; j < s.tk; ++j) {
          const float *kj = &a.k[(bh * s.tk + j) * s.d];
          double dot = 0;
          for (int64_t e = 0; e < s.d; ++e)
            dot += double(qi[e]) * kj[e];
          double x = a.scale * dot;
          if (s.causal && j > i)
            x = -kInf;
          if (!a.keep.empty() && !a.keep[b * s.tk + j])
            x = -kInf;
          if (!a.bias.empty())
            x += a.bias[b * s.tk + j];
          p[j] = x;
          nan |= std::isnan(x);
          if (!std::isnan(x))
            m = std::max(m, x);
        }
        double sum = 0;
        for (int64_t j = 0; j < s.tk; ++j)
          sum += std::isinf(m) || nan ? kNaN : std::exp(p[j] - m);
        for (int64_t j = 0; j < s.tk; ++j)
          p[j] = std::isinf(m) || nan ? kNaN : std::exp(p[j] - m) / sum;
        r.lse[bh * s.tq + i] = nan ? kNaN : m + std::log(sum);
        if (std::isinf(m))
          r.lse[bh * s.tq + i] = -kInf; // all hidden: m = -inf, sum = 0
        const float *gi = &a.g[(bh * s.tq + i) * s.dv];
        double pdp = 0;
        for (int64_t j = 0; j < s.tk; ++j) {
          const float *vj = &a.v[(bh * s.tk + j) * s.dv];
          double dot = 0;
          for (int64_t e = 0; e < s.dv; ++e) {
            r.out[(bh * s.tq + i) * s.dv + e] += p[j] * vj[e];
            r.dv[(bh * s.tk + j) * s.dv + e] += p[j] * gi[e];
            dot += double(gi[e]) * vj[e];
          }
          dp[j] = dot;
          pdp += p[j] * dot;
        }
        for (int64_t j = 0; j < s.tk; ++j) {
          double ds = a.scale * p[j] * (dp[j] - pdp);
          const float *kj = &a.k[(bh * s.tk + j) * s.d];
          for (int64_t e = 0; e < s.d; ++e) {
            r.dq[(bh * s.tq + i) * s.d + e] += ds * kj[e];
            r.dk[(bh * s.tk + j) * s.d + e] += ds * qi[e];
          }
        }
      }
    }
  return r;
}

/// Double cross-entropy of logits x [labels.size(), classes]: the summed
/// loss and the count of rows whose label is not `ignore`, and the logits'
/// gradient for a loss gradient of `lossGrad`.
struct CrossEntropyRef {
  double sum = 0;
  int64_t count = 0;
  std::vector<double> grad;
};

template <class L>
CrossEntropyRef refCrossEntropy(const std::vector<float> &x,
                                const std::vector<L> &labels, int64_t classes,
                                int64_t ignore, double lossGrad) {
  CrossEntropyRef ref;
  ref.grad.assign(x.size(), 0.0);
  for (int64_t r = 0; r < int64_t(labels.size()); ++r) {
    if (labels[r] == ignore)
      continue;
    const float *row = &x[r * classes];
    double m = -kInf, s = 0;
    for (int64_t j = 0; j < classes; ++j)
      m = std::max(m, double(row[j]));
    for (int64_t j = 0; j < classes; ++j)
      s += std::exp(row[j] - m);
    double lse = m + std::log(s);
    ref.sum += lse - row[labels[r]];
    ++ref.count;
    for (int64_t j = 0; j < classes; ++j)
      ref.grad[r * classes + j] =
          (std::exp(row[j] - lse) - (j == labels[r] ? 1.0 : 0.0)) * lossGrad;
  }
  return ref;
}

inline std::string attnName(const AttnShape &s) {
  return "B" + std::to_string(s.b) + " H" + std::to_string(s.h) + " Tq" +
         std::to_string(s.tq) + " Tk" + std::to_string(s.tk) + " D" +
         std::to_string(s.d) + " Dv" + std::to_string(s.dv) +
         (s.causal ? " causal" : "") +
         (s.mask == 1 ? " keep" : s.mask == 2 ? " bias" : "");
}

} // namespace tcc::gputest

#endif // TCC_TEST_UNIT_GPU_GPUREFERENCE_H
