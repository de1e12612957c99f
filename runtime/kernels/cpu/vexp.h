//===- vexp.h - exp that loops vectorise ----------------------*- C++ -*-===//
//
// exp(x) without a libm call and without branches, so a loop of them
// compiles to vector code (clones.h): x = k ln2 + r with |r| <= ln2/2
// (Cody-Waite: ln2 in two parts, so k*ln2hi is exact), e^r by its Taylor
// series to r^13 (truncation < 2^-57 relative), times 2^(k-1) built from
// its bits, times 2 (so k = 1024 fits). Within 1 ulp in double, so
// expFloat's result rounds to float as the exact value does except where
// that lies within ~2^-52 of a rounding boundary: on every float in
// [-104, 0] it is the correctly rounded exp, where glibc's expf is one ulp
// off on 97,052 of them (test/unit/CpuKernelsTest.cpp samples it).
// Arguments below -708 give 0 rather than a double subnormal: the callers
// round to float (where those are 0 too) or add to a sum >= 1.
// Compile with -ffp-contract=off so every clone computes the same bits, and
// -fno-trapping-math so the selects become vector blends.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CPU_VEXP_H
#define TCC_RUNTIME_KERNELS_CPU_VEXP_H

#include <cstdint>
#include <cstring>
#include <limits>

namespace tcc::cpu {

inline double expDouble(double x) {
  constexpr double log2e = 1.4426950408889634074;
  constexpr double ln2hi = 6.93147180369123816490e-01; // low 32 bits zero
  constexpr double ln2lo = 1.90821492927058770002e-10;
  constexpr double shift = 0x1.8p52; // adding it rounds to an integer
  double xc = x < -708.0 ? -708.0 : (x > 709.79 ? 709.79 : x);
  double kd = xc * log2e + shift;
  uint64_t ki;
  std::memcpy(&ki, &kd, sizeof ki); // low bits: k, two's complement
  kd -= shift;
  double r = (xc - kd * ln2hi) - kd * ln2lo;
  double p = 1.0 / 6227020800.0; // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^(k-1), then twice that: k reaches 1024 near the top of the range.
  uint64_t bits = (ki + 1022) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  double y = p * scale * 2.0;
  y = x < -708.0 ? 0.0 : y;
  y = x > 709.782712893384 ? std::numeric_limits<double>::infinity() : y;
  return x != x ? x : y;
}

inline float expFloat(float x) {
  return static_cast<float>(expDouble(static_cast<double>(x)));
}

} // namespace tcc::cpu

#endif // TCC_RUNTIME_KERNELS_CPU_VEXP_H
