// Softmax cross-entropy and its logits gradient over contiguous rows, with
// the interpreter's arithmetic (lib/Interp/Train.cpp): logsumexp and the
// loss sum in double, probabilities never stored.
#include "kernels/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>

namespace tcc::cpu {
namespace {

/// log(sum(exp(row))) in double, shifted by the row maximum (NaN wins).
double logSumExp(const float *row, int64_t n) {
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    if (double(row[j]) > m || std::isnan(double(row[j])))
      m = row[j];
  if (std::isinf(m))
    return m; // all -inf (or some +inf): no finite shift exists
  double s = 0;
  for (int64_t j = 0; j < n; ++j)
    s += std::exp(double(row[j]) - m);
  return m + std::log(s);
}

bool labelInRange(int64_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

} // namespace

int64_t cross_entropy_fwd(const float *logits, const int64_t *labels,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          float *lossSum, float *count) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = labels[r];
    if (label == ignoreIndex)
      continue;
    if (!labelInRange(label, classes))
      return r;
    const float *row = logits + r * classes;
    sum += logSumExp(row, classes) - double(row[label]);
    ++n;
  }
  *lossSum = static_cast<float>(sum);
  *count = static_cast<float>(n);
  return -1;
}

int64_t cross_entropy_grad(const float *logits, const int64_t *labels,
                           float lossSumGrad, float *dlogits, int64_t rows,
                           int64_t classes, int64_t ignoreIndex) {
  double g = lossSumGrad;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = labels[r];
    float *drow = dlogits + r * classes;
    if (label == ignoreIndex) {
      std::fill(drow, drow + classes, 0.0f);
      continue;
    }
    if (!labelInRange(label, classes))
      return r;
    const float *row = logits + r * classes;
    double lse = logSumExp(row, classes);
    for (int64_t j = 0; j < classes; ++j) {
      double p = std::exp(double(row[j]) - lse);
      drow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * g);
    }
  }
  return -1;
}

} // namespace tcc::cpu
