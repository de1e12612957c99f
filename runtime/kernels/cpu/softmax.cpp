// Softmax, log-softmax and their gradients over contiguous rows, with the
// interpreter's arithmetic (lib/Interp/Numerics.h softmaxRow, Reduce.cpp,
// Grad.cpp): elementwise math in float, row sums in double rounded once.
#include "kernels/cpu/cpu_kernels.h"

#include <cmath>
#include <limits>

namespace tcc::cpu {

void softmax_rows(const float *x, float *y, int64_t rows, int64_t len) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * len;
    float *yr = y + r * len;
    float m = -inf;
    bool nan = false;
    for (int64_t j = 0; j < len; ++j) {
      nan |= std::isnan(xr[j]);
      m = xr[j] > m ? xr[j] : m;
    }
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      // A NaN input poisons the whole row, as in torch.
      float e =
          nan ? std::numeric_limits<float>::quiet_NaN() : std::exp(xr[j] - m);
      yr[j] = e;
      sum += e;
    }
    float total = static_cast<float>(sum);
    for (int64_t j = 0; j < len; ++j)
      yr[j] /= total;
  }
}

void softmax_grad_rows(const float *y, const float *dy, float *dx, int64_t rows,
                       int64_t len) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = y + r * len, *gr = dy + r * len;
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += static_cast<double>(gr[j]) * yr[j];
    float s = static_cast<float>(sum);
    for (int64_t j = 0; j < len; ++j)
      dx[r * len + j] = yr[j] * (gr[j] - s);
  }
}

void log_softmax_rows(const float *x, float *y, int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * len;
    float *yr = y + r * len;
    // NaN-propagating max, so a NaN row stays NaN.
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < len; ++j)
      m = (std::isnan(m) || std::isnan(xr[j]))
              ? std::numeric_limits<float>::quiet_NaN()
              : (m < xr[j] ? xr[j] : m);
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += std::exp(xr[j] - m);
    float logSum = static_cast<float>(std::log(sum));
    for (int64_t j = 0; j < len; ++j)
      yr[j] = xr[j] - m - logSum;
  }
}

void log_softmax_grad_rows(const float *y, const float *dy, float *dx,
                           int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = y + r * len, *gr = dy + r * len;
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      sum += static_cast<double>(gr[j]);
    float s = static_cast<float>(sum);
    for (int64_t j = 0; j < len; ++j)
      dx[r * len + j] = gr[j] - std::exp(yr[j]) * s;
  }
}

} // namespace tcc::cpu
