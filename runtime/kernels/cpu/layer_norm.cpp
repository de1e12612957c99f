// Layer norm forward and backward over contiguous rows, with the
// interpreter's arithmetic (lib/Interp/Reduce.cpp, Grad.cpp): statistics in
// double, the forward's normalisation in float from float mean and rstd,
// the backward entirely in double.
#include "kernels/cpu/cpu_kernels.h"

#include <cmath>
#include <vector>

namespace tcc::cpu {
namespace {

/// Two-pass mean and rstd of one row: the centred variance does not cancel
/// catastrophically as E[x^2] - E[x]^2 does.
void rowStats(const float *x, int64_t len, double eps, double &mean,
              double &rstd) {
  double sum = 0, sq = 0;
  for (int64_t j = 0; j < len; ++j)
    sum += x[j];
  mean = sum / len;
  for (int64_t j = 0; j < len; ++j)
    sq += (x[j] - mean) * (x[j] - mean);
  rstd = 1.0 / std::sqrt(sq / len + eps);
}

} // namespace

void layer_norm_fwd(const float *x, const float *scale, const float *bias,
                    float *y, float *mean, float *rstd, int64_t rows,
                    int64_t len, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * len;
    double m, s;
    rowStats(xr, len, eps, m, s);
    float mu = static_cast<float>(m), rs = static_cast<float>(s);
    if (mean)
      mean[r] = mu;
    if (rstd)
      rstd[r] = rs;
    float *yr = y + r * len;
    for (int64_t j = 0; j < len; ++j) {
      float v = (xr[j] - mu) * rs;
      if (scale)
        v = v * scale[j];
      if (bias)
        v = v + bias[j];
      yr[j] = v;
    }
  }
}

void layer_norm_bwd(const float *x, const float *scale, const float *dy,
                    const float *mean, const float *rstd, float *dx,
                    float *dscale, float *dbias, int64_t rows, int64_t len,
                    double eps) {
  std::vector<double> dScale(dscale ? len : 0, 0.0),
      dBias(dbias ? len : 0, 0.0), xhat(len), dxhat(len);
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * len, *g = dy + r * len;
    double mu, rs;
    if (mean && rstd) {
      mu = mean[r];
      rs = rstd[r];
    } else {
      rowStats(xr, len, eps, mu, rs);
    }
    double meanDxhat = 0, meanDxhatXhat = 0;
    for (int64_t j = 0; j < len; ++j) {
      xhat[j] = (xr[j] - mu) * rs;
      dxhat[j] = static_cast<double>(g[j]) * (scale ? scale[j] : 1.0);
      meanDxhat += dxhat[j];
      meanDxhatXhat += dxhat[j] * xhat[j];
      if (dscale)
        dScale[j] += g[j] * xhat[j];
      if (dbias)
        dBias[j] += g[j];
    }
    meanDxhat /= len;
    meanDxhatXhat /= len;
    float *dxr = dx + r * len;
    for (int64_t j = 0; j < len; ++j)
      dxr[j] = static_cast<float>(
          rs * (dxhat[j] - meanDxhat - xhat[j] * meanDxhatXhat));
  }
  for (int64_t j = 0; j < len; ++j) {
    if (dscale)
      dscale[j] = static_cast<float>(dScale[j]);
    if (dbias)
      dbias[j] = static_cast<float>(dBias[j]);
  }
}

} // namespace tcc::cpu
