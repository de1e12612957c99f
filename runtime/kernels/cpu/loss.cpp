// Softmax cross-entropy and its logits gradient over contiguous rows, with
// the interpreter's arithmetic (lib/Interp/Train.cpp): logsumexp and the
// loss sum in double; the gradient keeps one row's exponentials (double).
// Rows run on the worker pool (parallel.h), each row on one thread; the
// loss sums the rows' terms in row order afterwards, so the split changes
// no bit. The exponentials come from expDouble (vexp.h: within 1 ulp of
// libm's exp, which the interpreter calls; the results round to float) in
// loops compiled per x86-64 level (clones.h).
#include "kernels/cpu/clones.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vexp.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tcc::cpu {
namespace {

/// The row maximum in double (NaN wins).
double rowMax(const float *row, int64_t n) {
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    if (double(row[j]) > m || std::isnan(double(row[j])))
      m = row[j];
  return m;
}

/// e = exp(row - m), in double.
TCC_CPU_CLONES void expRow(const float *row, double m, double *e, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    e[j] = expDouble(double(row[j]) - m);
}

/// log(sum(exp(row))) in double, shifted by the row maximum; `e` is
/// scratch of n doubles.
double logSumExp(const float *row, int64_t n, double *e) {
  double m = rowMax(row, n);
  if (std::isinf(m))
    return m; // all -inf (or some +inf): no finite shift exists
  expRow(row, m, e, n);
  double s = 0;
  for (int64_t j = 0; j < n; ++j)
    s += e[j];
  return m + std::log(s);
}

/// drow = float((e / sum - onehot(label)) * g).
TCC_CPU_CLONES void gradRow(const double *e, double sum, int64_t label,
                            double g, float *drow, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double p = e[j] / sum;
    drow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * g);
  }
}

bool labelInRange(int64_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

/// Rows per chunk of the pool: at least ~64K logits.
int64_t rowChunk(int64_t classes) {
  return std::max<int64_t>(1,
                           (int64_t(1) << 16) / std::max<int64_t>(1, classes));
}

/// The first row of [0, rows) whose label is neither ignoreIndex nor a
/// class, or -1.
int64_t badRow(const int64_t *labels, int64_t rows, int64_t classes,
               int64_t ignoreIndex) {
  for (int64_t r = 0; r < rows; ++r)
    if (labels[r] != ignoreIndex && !labelInRange(labels[r], classes))
      return r;
  return -1;
}

} // namespace

int64_t cross_entropy_fwd(const float *logits, const int64_t *labels,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          float *lossSum, float *count) {
  if (int64_t bad = badRow(labels, rows, classes, ignoreIndex); bad >= 0)
    return bad;
  std::vector<double> term(std::size_t(std::max<int64_t>(rows, 0)));
  parallel_for(rows, rowChunk(classes), [&](int64_t begin, int64_t end) {
    std::vector<double> e(static_cast<std::size_t>(classes));
    for (int64_t r = begin; r < end; ++r)
      if (labels[r] != ignoreIndex) {
        const float *row = logits + r * classes;
        term[std::size_t(r)] =
            logSumExp(row, classes, e.data()) - double(row[labels[r]]);
      }
  });
  double sum = 0;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r)
    if (labels[r] != ignoreIndex) {
      sum += term[std::size_t(r)];
      ++n;
    }
  *lossSum = static_cast<float>(sum);
  *count = static_cast<float>(n);
  return -1;
}

int64_t cross_entropy_grad(const float *logits, const int64_t *labels,
                           float lossSumGrad, float *dlogits, int64_t rows,
                           int64_t classes, int64_t ignoreIndex) {
  if (int64_t bad = badRow(labels, rows, classes, ignoreIndex); bad >= 0)
    return bad;
  double g = lossSumGrad;
  parallel_for(rows, rowChunk(classes), [&](int64_t begin, int64_t end) {
    std::vector<double> e(static_cast<std::size_t>(classes));
    for (int64_t r = begin; r < end; ++r) {
      int64_t label = labels[r];
      float *drow = dlogits + r * classes;
      if (label == ignoreIndex) {
        std::fill(drow, drow + classes, 0.0f);
        continue;
      }
      // p_j = exp(x_j - m) / sum_k exp(x_k - m): one exp per logit; the
      // interpreter's exp(x_j - logsumexp) differs only by double rounding
      // (~1e-16 relative) before the result rounds to float.
      const float *row = logits + r * classes;
      double m = rowMax(row, classes);
      if (std::isinf(m)) { // no finite shift: the reference formula
        double lse = logSumExp(row, classes, e.data());
        for (int64_t j = 0; j < classes; ++j) {
          double p = std::exp(double(row[j]) - lse);
          drow[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * g);
        }
        continue;
      }
      expRow(row, m, e.data(), classes);
      double sum = 0;
      for (int64_t j = 0; j < classes; ++j)
        sum += e[std::size_t(j)];
      gradRow(e.data(), sum, label, g, drow, classes);
    }
  });
  return -1;
}

} // namespace tcc::cpu
