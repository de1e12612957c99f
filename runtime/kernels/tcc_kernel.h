//===- tcc_kernel.h - Prelude of the generated kernels -----------*- C++ -*-===//
//
// Every generated kernel source includes this header and nothing else, and
// compiles two ways: as host C++ into a shared object (CPU backend) and with
// nvcc into a fatbin (CUDA backend). Kernel bodies are written once against
// the macros and helpers below.
//
// Kernel ABI (one `exec.fusion` named NAME -> one symbol `tcc_NAME`):
//
//   extern "C" void tcc_NAME(const void *const *inputs, void *output,
//                            int64_t begin, int64_t end);
//
//   inputs  the fusion's operands in order, each a dense row-major buffer of
//           its own (static) shape and element type; broadcasting, layout
//           (transpose, slice, concat, gather) and reduction indexing are
//           done by the kernel (constant index math).
//   output  the dense row-major result buffer.
//   [begin, end)  the range of flattened output indices to compute. Each
//           output element is computed independently, by one iteration (one
//           CUDA thread); a reduction or gather_grad loops over the elements
//           it reduces inside that iteration, so any split of [0, n) gives
//           the same bits. Inputs and output must not overlap.
//     Host: a plain loop, so a runtime may split [0, n) across threads.
//     CUDA: `extern "C" __global__`; a grid-stride loop over [begin, end),
//           normally launched with 0 / n. `inputs` must then point to device
//           memory holding the device pointers.
//
// Element types: f32 float, f64 double, i32 int32_t, i64 int64_t, i1 uint8_t
// (0 or 1); bf16 and f16 are stored as uint16_t bit patterns and computed in
// float: read with bf16_to_f32 / f16_to_f32, every op's result rounded once
// to the storage type (round_bf16 / round_f16, nearest even), as the
// interpreter does. The math below matches lib/Interp (the reference interpreter)
// formula for formula and in the same order, so the host kernels are
// bit-identical to it; nvcc must be run with --fmad=false for the same
// reason (the host build uses -ffp-contract=off).
//
// Plain C++17, no dependencies, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_TCC_KERNEL_H
#define TCC_RUNTIME_KERNELS_TCC_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define TCC_KERNEL_FN __device__ __forceinline__
#define TCC_KERNEL(name)                                                       \
  extern "C" __global__ void tcc_##name(const void *const *inputs,            \
                                        void *output, int64_t begin,           \
                                        int64_t end)
#define TCC_FOR_EACH(i)                                                        \
  for (int64_t i = begin + int64_t(blockIdx.x) * blockDim.x + threadIdx.x;     \
       i < end; i += int64_t(gridDim.x) * blockDim.x)
#else
#define TCC_KERNEL_FN inline
#define TCC_KERNEL(name)                                                       \
  extern "C" void tcc_##name(const void *const *inputs, void *output,         \
                             int64_t begin, int64_t end)
#define TCC_FOR_EACH(i) for (int64_t i = begin; i < end; ++i)
#endif

namespace tcc_k {

// The C names resolve to the same libm entry points as the interpreter's
// std:: overloads on the host (std::exp(float) is expf) and exist as device
// functions under nvcc, so one spelling serves both.
#define TCC_MATH(name, fname)                                                  \
  TCC_KERNEL_FN float name(float x) { return ::fname(x); }                     \
  TCC_KERNEL_FN double name(double x) { return ::name(x); }
TCC_MATH(exp, expf)
TCC_MATH(log, logf)
TCC_MATH(sqrt, sqrtf)
TCC_MATH(tanh, tanhf)
TCC_MATH(erf, erff)
TCC_MATH(cos, cosf)
TCC_MATH(sin, sinf)
TCC_MATH(fabs, fabsf)
#undef TCC_MATH
TCC_KERNEL_FN float pow(float a, float b) { return ::powf(a, b); }
TCC_KERNEL_FN double pow(double a, double b) { return ::pow(a, b); }

TCC_KERNEL_FN float f32_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
TCC_KERNEL_FN double f64_bits(uint64_t b) {
  double f;
  memcpy(&f, &b, sizeof f);
  return f;
}

// bf16 / f16 <-> float, round to nearest even, overflow to inf, NaN kept
// quiet, exact f16 subnormals: a copy of runtime/data/half.h (this header
// stands alone); test/unit/CodegenTest.cpp pins the two together.
TCC_KERNEL_FN uint32_t f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
TCC_KERNEL_FN uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_to_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
TCC_KERNEL_FN float bf16_to_f32(uint16_t h) {
  return f32_bits(static_cast<uint32_t>(h) << 16);
}
TCC_KERNEL_FN uint16_t f32_to_f16(float f) {
  uint32_t x = f32_to_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u)
    return static_cast<uint16_t>(sign | 0x7E00u | ((x >> 13) & 0x3FFu));
  if (x >= 0x477FF000u)
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (x >= 0x38800000u) {
    uint32_t h = ((((x >> 23) - 127u + 15u) << 10) | ((x >> 13) & 0x3FFu));
    uint32_t rem = x & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (x <= 0x33000000u)
    return sign;
  uint32_t e = x >> 23;
  uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126u - e;
  uint32_t h = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}
TCC_KERNEL_FN float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu)
    return f32_bits(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    if (m == 0)
      return f32_bits(sign);
    int32_t exp = 1;
    while (!(m & 0x400u)) {
      m <<= 1;
      --exp;
    }
    m &= 0x3FFu;
    return f32_bits(sign | (static_cast<uint32_t>(exp + 112) << 23) |
                    (m << 13));
  }
  return f32_bits(sign | ((e + 112u) << 23) | (m << 13));
}
TCC_KERNEL_FN float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }
TCC_KERNEL_FN float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

template <class T> struct IsFloat { static const bool value = false; };
template <> struct IsFloat<float> { static const bool value = true; };
template <> struct IsFloat<double> { static const bool value = true; };
template <class T> struct Unsigned;
template <> struct Unsigned<int32_t> { typedef uint32_t type; };
template <> struct Unsigned<int64_t> { typedef uint64_t type; };
template <> struct Unsigned<uint8_t> { typedef uint8_t type; };

// Integer arithmetic wraps modulo 2^bits, never UB (lib/Interp/Numerics.h).
template <class T> TCC_KERNEL_FN T wrap_add(T a, T b) {
  typedef typename Unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T> TCC_KERNEL_FN T wrap_sub(T a, T b) {
  typedef typename Unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T> TCC_KERNEL_FN T wrap_mul(T a, T b) {
  typedef typename Unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
// The interpreter rejects a zero divisor; a kernel cannot report it, so it
// yields 0 rather than trapping. min / -1 wraps back to min.
template <class T> TCC_KERNEL_FN T int_div(T a, T b) {
  if (b == T(0))
    return T(0);
  if (b == T(-1))
    return wrap_sub(T(0), a);
  return static_cast<T>(a / b);
}

// max/min propagating NaN, as numpy.maximum and torch.maximum do.
TCC_KERNEL_FN float quiet_nan(float) { return f32_bits(0x7fc00000u); }
TCC_KERNEL_FN double quiet_nan(double) {
  return f64_bits(0x7ff8000000000000ull);
}
template <class T> TCC_KERNEL_FN T nan_max(T a, T b) {
  if (a != a || b != b)
    return quiet_nan(a);
  return a < b ? b : a;
}
template <class T> TCC_KERNEL_FN T nan_min(T a, T b) {
  if (a != a || b != b)
    return quiet_nan(a);
  return b < a ? b : a;
}
template <class T> TCC_KERNEL_FN T int_max(T a, T b) { return a < b ? b : a; }
template <class T> TCC_KERNEL_FN T int_min(T a, T b) { return b < a ? b : a; }

template <class T> TCC_KERNEL_FN T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}
template <class T> TCC_KERNEL_FN T rsqrt(T x) { return T(1) / sqrt(x); }

template <class T> TCC_KERNEL_FN T gelu(T x) {
  return T(0.5) * x * (T(1) + erf(x * static_cast<T>(0.7071067811865476)));
}
template <class T> TCC_KERNEL_FN T gelu_tanh(T x) {
  const T k = static_cast<T>(0.7978845608028654); // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + tanh(k * (x + T(0.044715) * x * x * x)));
}
// dy * gelu'(x), PyTorch's formulas (lib/Interp/Grad.cpp).
template <class T> TCC_KERNEL_FN T gelu_grad(T v, T dy) {
  const T invSqrt2 = static_cast<T>(0.7071067811865476);
  const T invSqrt2Pi = static_cast<T>(0.3989422804014327);
  T cdf = T(0.5) * (T(1) + erf(v * invSqrt2));
  T d = cdf + v * invSqrt2Pi * exp(T(-0.5) * v * v);
  return dy * d;
}
template <class T> TCC_KERNEL_FN T gelu_grad_tanh(T v, T dy) {
  const T sqrt2OverPi = static_cast<T>(0.7978845608028654);
  const T kappa = static_cast<T>(0.044715);
  T t = tanh(sqrt2OverPi * (v + kappa * v * v * v));
  T d = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * sqrt2OverPi *
                                  (T(1) + T(3) * kappa * v * v);
  return dy * d;
}

// tcc.cast, as the interpreter's convertElement: to i1 is `!= 0`; float to
// integer truncates toward zero, saturates, and maps NaN to 0; integer to
// integer wraps. The bounds compare in double: an integral double at or
// above 2^63 - 1 is at least 2^63, so this matches the interpreter's long
// double comparison (long double does not exist on the device).
template <class To, class From> struct Convert {
  TCC_KERNEL_FN static To run(From x) {
    return static_cast<To>(static_cast<typename Unsigned<To>::type>(
        static_cast<uint64_t>(static_cast<int64_t>(x))));
  }
};
template <class From> struct Convert<uint8_t, From> {
  TCC_KERNEL_FN static uint8_t run(From x) { return x != From(0) ? 1 : 0; }
};
template <class From> struct Convert<float, From> {
  TCC_KERNEL_FN static float run(From x) { return static_cast<float>(x); }
};
template <class From> struct Convert<double, From> {
  TCC_KERNEL_FN static double run(From x) { return static_cast<double>(x); }
};
template <class To> TCC_KERNEL_FN To float_to_int(double x, double lo,
                                                  double hi, To tlo, To thi) {
  if (x != x)
    return To(0);
  double t = ::trunc(x);
  if (t <= lo)
    return tlo;
  if (t >= hi)
    return thi;
  return static_cast<To>(t);
}
#define TCC_FLOAT_TO_INT(From)                                                 \
  template <> struct Convert<int64_t, From> {                                  \
    TCC_KERNEL_FN static int64_t run(From x) {                                 \
      return float_to_int<int64_t>(x, -9223372036854775808.0,                  \
                                   9223372036854775807.0, INT64_MIN,           \
                                   INT64_MAX);                                 \
    }                                                                          \
  };                                                                           \
  template <> struct Convert<int32_t, From> {                                  \
    TCC_KERNEL_FN static int32_t run(From x) {                                 \
      return float_to_int<int32_t>(x, -2147483648.0, 2147483647.0, INT32_MIN,  \
                                   INT32_MAX);                                 \
    }                                                                          \
  };
TCC_FLOAT_TO_INT(float)
TCC_FLOAT_TO_INT(double)
#undef TCC_FLOAT_TO_INT
template <class To, class From> TCC_KERNEL_FN To cast(From x) {
  return Convert<To, From>::run(x);
}

} // namespace tcc_k

#endif // TCC_RUNTIME_KERNELS_TCC_KERNEL_H
