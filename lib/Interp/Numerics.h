// Numeric conventions shared by the kernels.
//
// Elementwise math of an f32 op is done in float, so overflow, rounding and
// special values behave as in float32 PyTorch. Sums (reductions, means and
// variances, dot products) accumulate in double and round once: that is
// within float32 PyTorch's own (blocked, pairwise) summation error and, unlike
// a naive float loop, does not drift with the length of the sum.
#ifndef TCC_LIB_INTERP_NUMERICS_H
#define TCC_LIB_INTERP_NUMERICS_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tcc::interp {

/// The accumulator of sums over T.
template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

/// Integer arithmetic wraps modulo 2^bits (as on every backend), never UB.
template <class T> T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <class T> T wrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) -
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a - b;
}
template <class T> T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a * b;
}

template <class T> bool isNaN(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

/// max/min propagating NaN, as numpy.maximum and torch.maximum do.
template <class T> T nanMax(T a, T b) {
  if (isNaN(a) || isNaN(b))
    return std::numeric_limits<T>::quiet_NaN();
  return a < b ? b : a;
}
template <class T> T nanMin(T a, T b) {
  if (isNaN(a) || isNaN(b))
    return std::numeric_limits<T>::quiet_NaN();
  return b < a ? b : a;
}

/// In-place softmax of the `n` elements x[0], x[stride], ...: subtracts the
/// maximum first so exp never overflows. A row whose every entry is -inf
/// (e.g. attention with every key hidden) becomes NaN, as torch.softmax
/// gives: -inf - -inf is NaN. A NaN anywhere makes the whole row NaN.
template <class T> void softmaxRow(T *x, int64_t n, int64_t stride = 1) {
  T m = -std::numeric_limits<T>::infinity();
  bool nan = false;
  for (int64_t j = 0; j < n; ++j) {
    nan |= std::isnan(x[j * stride]);
    m = x[j * stride] > m ? x[j * stride] : m;
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    T e =
        nan ? std::numeric_limits<T>::quiet_NaN() : std::exp(x[j * stride] - m);
    x[j * stride] = e;
    sum += e;
  }
  T total = static_cast<T>(sum);
  for (int64_t j = 0; j < n; ++j)
    x[j * stride] /= total;
}

} // namespace tcc::interp

#endif // TCC_LIB_INTERP_NUMERICS_H
