// Softmax, log-softmax and their gradients over contiguous rows, with the
// interpreter's arithmetic (lib/Interp/Numerics.h softmaxRow, Reduce.cpp,
// Grad.cpp): elementwise math in float, row sums in double rounded once.
// softmax_rows takes its exponentials from expFloat (vexp.h: correctly
// rounded but for inputs within ~2^-52 of a rounding boundary, where glibc's
// expf, which the interpreter calls, is off by one ulp now and then), in
// loops compiled per x86-64 level (clones.h), and advances kSumRows rows'
// sums at once: each row still sums in element order.
#include "kernels/cpu/clones.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vexp.h"

#include <cmath>
#include <limits>

namespace tcc::cpu {
namespace {

constexpr int kSumRows = 4;

/// y = exp(x - m), or NaN everywhere when `nan` (a NaN input poisons the
/// whole row, as in torch).
TCC_CPU_CLONES void expRow(const float *x, float m, bool nan, float *y,
                           int64_t len) {
  if (nan) {
    for (int64_t j = 0; j < len; ++j)
      y[j] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  for (int64_t j = 0; j < len; ++j)
    y[j] = expFloat(x[j] - m);
}

TCC_CPU_CLONES void divideRow(float *y, float total, int64_t len) {
  for (int64_t j = 0; j < len; ++j)
    y[j] /= total;
}

/// Softmax of R consecutive rows of `len`.
template <int R> void softmaxRows(const float *x, float *y, int64_t len) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int i = 0; i < R; ++i) {
    const float *xr = x + i * len;
    float m = -inf;
    bool nan = false;
    for (int64_t j = 0; j < len; ++j) {
      nan |= std::isnan(xr[j]);
      m = xr[j] > m ? xr[j] : m;
    }
    expRow(xr, m, nan, y + i * len, len);
  }
  double sum[R] = {};
  for (int64_t j = 0; j < len; ++j)
    for (int i = 0; i < R; ++i)
      sum[i] += y[i * len + j];
  for (int i = 0; i < R; ++i)
    divideRow(y + i * len, static_cast<float>(sum[i]), len);
}

} // namespace

void softmax_rows(const float *x, float *y, int64_t rows, int64_t len) {
  int64_t r = 0;
  for (; r + kSumRows <= rows; r += kSumRows)
    softmaxRows<kSumRows>(x + r * len, y + r * len, len);
  for (; r < rows; ++r)
    softmaxRows<1>(x + r * len, y + r * len, len);
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
