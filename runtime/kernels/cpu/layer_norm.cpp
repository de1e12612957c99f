// Layer norm forward and backward over contiguous rows, with the
// interpreter's arithmetic (lib/Interp/Reduce.cpp, Grad.cpp): statistics in
// double, the forward's normalisation in float from float mean and rstd,
// the backward entirely in double.
//
// Each row's sums run in the interpreter's order (element by element), so
// they are chains of dependent adds; the loops advance kRows rows at once,
// kRows independent chains the CPU overlaps, and the elementwise loops are
// compiled per x86-64 level (clones.h, -ffp-contract=off): the same bits,
// faster. Rows are split over the worker pool (parallel.h); the backward's
// scale and bias gradients, sums over rows, run afterwards over column
// ranges, each column summing its rows in row order as before.
#include "kernels/cpu/clones.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcc::cpu {
namespace {

/// Rows whose sums advance together.
constexpr int kRows = 4;

/// Rows per pool chunk: at least ~16K elements.
int64_t rowChunk(int64_t len) {
  return std::max<int64_t>(kRows,
                           (int64_t(1) << 14) / std::max<int64_t>(1, len));
}

/// Two-pass mean and rstd of rows x[i * len, (i + 1) * len), i < R: the
/// centred variance does not cancel catastrophically as E[x^2] - E[x]^2
/// does.
template <int R>
void rowStats(const float *x, int64_t len, double eps, double *mean,
              double *rstd) {
  double sum[R] = {}, sq[R] = {};
  for (int64_t j = 0; j < len; ++j)
    for (int i = 0; i < R; ++i)
      sum[i] += x[i * len + j];
  for (int i = 0; i < R; ++i)
    mean[i] = sum[i] / len;
  for (int64_t j = 0; j < len; ++j)
    for (int i = 0; i < R; ++i) {
      double d = x[i * len + j] - mean[i];
      sq[i] += d * d;
    }
  for (int i = 0; i < R; ++i)
    rstd[i] = 1.0 / std::sqrt(sq[i] / len + eps);
}

TCC_CPU_CLONES void normalize(const float *x, const float *scale,
                              const float *bias, float mu, float rs, float *y,
                              int64_t len) {
  for (int64_t j = 0; j < len; ++j) {
    float v = (x[j] - mu) * rs;
    if (scale)
      v = v * scale[j];
    if (bias)
      v = v + bias[j];
    y[j] = v;
  }
}

template <int R>
void fwdRows(const float *x, const float *scale, const float *bias, float *y,
             float *mean, float *rstd, int64_t r, int64_t len, double eps) {
  double m[R], s[R];
  rowStats<R>(x + r * len, len, eps, m, s);
  for (int i = 0; i < R; ++i) {
    float mu = static_cast<float>(m[i]), rs = static_cast<float>(s[i]);
    if (mean)
      mean[r + i] = mu;
    if (rstd)
      rstd[r + i] = rs;
    normalize(x + (r + i) * len, scale, bias, mu, rs, y + (r + i) * len, len);
  }
}

/// xhat = (x - mu) * rs and dxhat = dy * scale of one row, in double.
TCC_CPU_CLONES void rowTerms(const float *x, const float *g, const float *scale,
                             double mu, double rs, double *xhat, double *dxhat,
                             int64_t len) {
  for (int64_t j = 0; j < len; ++j) {
    xhat[j] = (x[j] - mu) * rs;
    dxhat[j] = static_cast<double>(g[j]) * (scale ? scale[j] : 1.0);
  }
}

TCC_CPU_CLONES void rowGrad(const double *xhat, const double *dxhat, double rs,
                            double meanDxhat, double meanDxhatXhat,
                            const float *residual, float *dx, int64_t len) {
  if (residual)
    for (int64_t j = 0; j < len; ++j)
      dx[j] = static_cast<float>(
          rs * (dxhat[j] - meanDxhat - xhat[j] * meanDxhatXhat) + residual[j]);
  else
    for (int64_t j = 0; j < len; ++j)
      dx[j] = static_cast<float>(
          rs * (dxhat[j] - meanDxhat - xhat[j] * meanDxhatXhat));
}

/// dx of rows [r, r + R); their statistics in mu, rs; `work` holds 2 * R *
/// len doubles.
template <int R>
void bwdRows(const float *x, const float *scale, const float *dy,
             const float *residual, const double *mu, const double *rs,
             float *dx, int64_t r, int64_t len, double *work) {
  double *xhat = work, *dxhat = work + R * len;
  for (int i = 0; i < R; ++i)
    rowTerms(x + (r + i) * len, dy + (r + i) * len, scale, mu[r + i], rs[r + i],
             xhat + i * len, dxhat + i * len, len);
  double a[R] = {}, b[R] = {};
  for (int64_t j = 0; j < len; ++j)
    for (int i = 0; i < R; ++i) {
      a[i] += dxhat[i * len + j];
      b[i] += dxhat[i * len + j] * xhat[i * len + j];
    }
  for (int i = 0; i < R; ++i)
    rowGrad(xhat + i * len, dxhat + i * len, rs[r + i], a[i] / len, b[i] / len,
            residual ? residual + (r + i) * len : nullptr, dx + (r + i) * len,
            len);
}

/// Columns [j0, j1) of the scale and bias gradients and of dx's sum: sums
/// over every row, in row order.
TCC_CPU_CLONES void columnSums(const float *x, const float *dy,
                               const float *dx, const double *mu,
                               const double *rs, int64_t rows, int64_t len,
                               int64_t j0, int64_t j1, double *dScale,
                               double *dBias, double *dSum) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * len, *g = dy + r * len, *d = dx + r * len;
    for (int64_t j = j0; j < j1; ++j) {
      if (dScale)
        dScale[j] += g[j] * ((xr[j] - mu[r]) * rs[r]);
      if (dBias)
        dBias[j] += g[j];
      if (dSum)
        dSum[j] += d[j];
    }
  }
}

} // namespace

void layer_norm_fwd(const float *x, const float *scale, const float *bias,
                    float *y, float *mean, float *rstd, int64_t rows,
                    int64_t len, double eps) {
  parallel_for(rows, rowChunk(len), [&](int64_t begin, int64_t end) {
    int64_t r = begin;
    for (; r + kRows <= end; r += kRows)
      fwdRows<kRows>(x, scale, bias, y, mean, rstd, r, len, eps);
    for (; r < end; ++r)
      fwdRows<1>(x, scale, bias, y, mean, rstd, r, len, eps);
  });
}

void layer_norm_bwd(const float *x, const float *scale, const float *dy,
                    const float *residual, const float *mean, const float *rstd,
                    float *dx, float *dscale, float *dbias, float *dxsum,
                    int64_t rows, int64_t len, double eps) {
  // Every row's statistics (the forward's, float, or recomputed), kept for
  // the column sums.
  std::vector<double> mu(size_t(std::max<int64_t>(rows, 0))), rs(mu.size());
  parallel_for(rows, rowChunk(len), [&](int64_t begin, int64_t end) {
    std::vector<double> work(size_t(2 * kRows * len));
    for (int64_t r = begin; r < end;) {
      bool whole = r + kRows <= end;
      int n = whole ? kRows : 1;
      if (mean && rstd)
        for (int i = 0; i < n; ++i) {
          mu[size_t(r + i)] = mean[r + i];
          rs[size_t(r + i)] = rstd[r + i];
        }
      else if (whole)
        rowStats<kRows>(x + r * len, len, eps, &mu[size_t(r)], &rs[size_t(r)]);
      else
        rowStats<1>(x + r * len, len, eps, &mu[size_t(r)], &rs[size_t(r)]);
      if (whole)
        bwdRows<kRows>(x, scale, dy, residual, mu.data(), rs.data(), dx, r,
                       len, work.data());
      else
        bwdRows<1>(x, scale, dy, residual, mu.data(), rs.data(), dx, r, len,
                   work.data());
      r += n;
    }
  });
  if (!dscale && !dbias && !dxsum)
    return;
  std::vector<double> dScale(dscale ? len : 0, 0.0),
      dBias(dbias ? len : 0, 0.0), dSum(dxsum ? len : 0, 0.0);
  // Column ranges of at least 64, whole cache lines of the float rows.
  parallel_for(len, 64, [&](int64_t j0, int64_t j1) {
    columnSums(x, dy, dx, mu.data(), rs.data(), rows, len, j0, j1,
               dscale ? dScale.data() : nullptr,
               dbias ? dBias.data() : nullptr, dxsum ? dSum.data() : nullptr);
  });
  for (int64_t j = 0; j < len; ++j) {
    if (dscale)
      dscale[j] = static_cast<float>(dScale[j]);
    if (dbias)
      dbias[j] = static_cast<float>(dBias[j]);
    if (dxsum)
      dxsum[j] = static_cast<float>(dSum[j]);
  }
}

} // namespace tcc::cpu
