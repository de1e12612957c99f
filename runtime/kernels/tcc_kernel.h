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
//           normally launched with 0 / n (any grid and block size is
//           correct). A column reduction of many rows (TCC_KERNEL_BLOCK,
//           the plan's kernel "outputs_per_block" and "block_threads") is
//           launched with one block of block_threads threads per
//           outputs_per_block outputs and slice of the rows (grid.y: the
//           plan's "row_slices", 1 when absent): a block's warps split its
//           slice's rows of its 32 outputs and add their double partial
//           sums in warp order; with several slices the blocks write them
//           to a workspace ("workspace_bytes", zeroed once, its device
//           pointer in inputs[N] after the N inputs; at most that many
//           slices) and the last block of each 32 columns adds them in
//           slice order (exact sums in all but widely ranged data, so the
//           host's bits in practice). Other grids and blocks that are whole
//           warps are correct too (one kernel at a time per workspace),
//           others take the one-thread-per-output loop. A row
//           reduction (a reduction over the innermost dims) launched with
//           outputs_per_block rows a block of block_threads gives each row
//           block_threads / outputs_per_block threads (a warp or the
//           block), which stride the row and combine their partials in a
//           fixed shared-memory tree (pick_max / pick_min below keep max
//           and min bit-exact; sums in double the host's bits in practice);
//           any block of at most block_threads threads that is a
//           multiple of outputs_per_block is correct, others take the
//           one-thread-per-output loop. `inputs` must then point to
//           device memory holding the device pointers, and the inputs
//           must not change while the kernel runs (vector loads go
//           through the read-only path).
//           A kernel whose inputs are read at the output index
//           (TCC_VECTOR_LOOP below) computes W consecutive elements per
//           work item with 16-byte loads and stores when every such buffer
//           and the output are aligned for those accesses (16 bytes, or
//           W x element size when less; checked at run time, and the
//           artifact's buffers are 64-byte aligned), else the scalar loop.
//     Host with TCC_KERNEL_EMULATE_CUDA defined: the CUDA variant as host
//           code, one emulated thread per call (tests without a GPU).
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
/// A kernel launched with blocks of exactly `threads` threads (the plan's
/// "block_threads"): its registers fit them.
#define TCC_KERNEL_BLOCK(name, threads)                                        \
  extern "C" __global__ void __launch_bounds__(threads)                        \
      tcc_##name(const void *const *inputs, void *output, int64_t begin,       \
                 int64_t end)
#define TCC_KERNEL_GRID 1
#define TCC_UNROLL _Pragma("unroll")
#else
#define TCC_KERNEL_FN inline
// A host.so is compiled once, for whatever x86-64 machine runs the
// artifact: each kernel is cloned for x86-64-v4 (AVX-512), x86-64-v3 (AVX2)
// and the baseline, and the loader binds the clone the CPU can run (an
// ifunc). Every clone does the same IEEE operations in the same order
// (-ffp-contract=off: no fused multiply-add; no reassociation), so their
// results are the same bits; only the width of the vectorised loops differs.
// -DTCC_KERNEL_NO_CLONES compiles the one baseline version.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(TCC_KERNEL_EMULATE_CUDA) && !defined(TCC_KERNEL_NO_CLONES)
#define TCC_HOST_CLONES                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TCC_HOST_CLONES
#endif
#define TCC_KERNEL(name)                                                       \
  extern "C" TCC_HOST_CLONES void tcc_##name(                                  \
      const void *const *inputs, void *output, int64_t begin, int64_t end)
#define TCC_KERNEL_BLOCK(name, threads) TCC_KERNEL(name)
#define TCC_UNROLL
#if defined(TCC_KERNEL_EMULATE_CUDA)
// The CUDA variant as host code, for tests on machines without a GPU: the
// kernels take their thread from blockIdx / threadIdx / blockDim / gridDim
// below (per host thread), which tcc_emulate_cuda_thread sets before each
// call; a test calls every kernel once per (block, thread) of the launch it
// emulates (the threads of a kernel are independent, so running them one
// after another is exact). A kernel whose threads cooperate
// (TCC_KERNEL_BLOCK: __shared__ memory and __syncthreads) runs a block's
// threads as concurrent host threads, one block at a time:
// tcc_emulate_cuda_block(threads) arms the barrier __syncthreads waits on,
// and __shared__ arrays are statics, which the block's threads share;
// __threadfence is a fence and atomicAdd (unsigned) an atomic add. The
// vector accesses are counted and their alignment checked
// (tcc_emulate_cuda_counters).
#include <atomic>
#include <condition_variable>
#include <mutex>
#define TCC_KERNEL_GRID 1
namespace tcc_k {
namespace emu {
struct Dim3 {
  unsigned x, y, z;
};
struct Counters {
  int64_t vector_loads, vector_stores, misaligned;
};
static Counters counters;
/// The barrier of the block whose threads run (a generation count, so the
/// same barrier serves every __syncthreads of the block).
struct Barrier {
  std::mutex mutex;
  std::condition_variable cv;
  unsigned threads = 0, waiting = 0, generation = 0;
};
static Barrier barrier;
inline void syncthreads() {
  std::unique_lock<std::mutex> lock(barrier.mutex);
  const unsigned generation = barrier.generation;
  if (++barrier.waiting == barrier.threads) {
    barrier.waiting = 0;
    ++barrier.generation;
    barrier.cv.notify_all();
    return;
  }
  barrier.cv.wait(lock, [&] { return barrier.generation != generation; });
}
} // namespace emu
} // namespace tcc_k
static thread_local tcc_k::emu::Dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __syncthreads() tcc_k::emu::syncthreads()
#define __shared__ static
#define __threadfence() std::atomic_thread_fence(std::memory_order_seq_cst)
inline unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
/// Arms the barrier for a block of `threads` concurrent threads.
extern "C" void tcc_emulate_cuda_block(unsigned threads) {
  tcc_k::emu::barrier.threads = threads;
  tcc_k::emu::barrier.waiting = 0;
}
/// The thread `thread_index` of block (block_x, block_y) of a grid of
/// grid_x x grid_y blocks of `block` threads.
extern "C" void tcc_emulate_cuda_thread(unsigned grid_x, unsigned grid_y,
                                        unsigned block, unsigned block_x,
                                        unsigned block_y,
                                        unsigned thread_index) {
  gridDim = {grid_x, grid_y, 1};
  blockDim = {block, 1, 1};
  blockIdx = {block_x, block_y, 0};
  threadIdx = {thread_index, 0, 0};
}
/// Reads and clears the counters: {vector loads, vector stores, vector
/// accesses at an address not aligned to their size}.
extern "C" void tcc_emulate_cuda_counters(int64_t *out) {
  out[0] = tcc_k::emu::counters.vector_loads;
  out[1] = tcc_k::emu::counters.vector_stores;
  out[2] = tcc_k::emu::counters.misaligned;
  tcc_k::emu::counters = {0, 0, 0};
}
#else
#define TCC_KERNEL_GRID 0
#endif
#endif

#if TCC_KERNEL_GRID
// The flat index of this thread in the launch and the launch's thread count.
#define TCC_THREAD_INDEX (int64_t(blockIdx.x) * blockDim.x + threadIdx.x)
#define TCC_THREAD_COUNT (int64_t(gridDim.x) * blockDim.x)
#define TCC_FOR_EACH(i)                                                        \
  for (int64_t i = begin + TCC_THREAD_INDEX; i < end; i += TCC_THREAD_COUNT)
// A kernel whose buffers are read and written at the output index computes
// 16 bytes per access on the device: `element(i, x...)` is the output
// element i (in its storage type) from the elements x of the contiguous
// inputs at i; the buffers follow, the output first. Returns from the
// kernel when every buffer is aligned for its vector accesses, else falls
// through to the scalar loop.
#define TCC_VECTOR_LOOP(W, element, ...)                                       \
  if (tcc_k::vector_loop<W>(begin, end, element, __VA_ARGS__))                 \
  return
#else
// The runtime's element ranges start at 0 or later; said so, the compiler
// divides the non-negative flat indices as unsigned (shifts and masks for
// powers of two, no sign fix-up): layout kernels run about twice as fast.
#define TCC_FOR_EACH(i)                                                        \
  for (int64_t i = tcc_k::non_negative(begin); i < end; ++i)
#define TCC_VECTOR_LOOP(W, element, ...) (void)0
#endif

namespace tcc_k {

/// `x`, which the caller knows is >= 0 (TCC_FOR_EACH's start).
TCC_KERNEL_FN int64_t non_negative(int64_t x) {
  if (x < 0)
    __builtin_unreachable();
  return x;
}

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
// A float max / min split over threads (a row reduction on the device)
// with the bits of the in-order nan_max / nan_min loop: a partial is a
// value and the row index it came from; of equal values (+0 and -0) the
// lower index wins, as the in-order loop keeps the first; NaN wins as the
// canonical quiet NaN. Folds (x, at r) into (v, at).
template <class T>
TCC_KERNEL_FN void pick_max(T &v, int64_t &at, T x, int64_t r) {
  if (v != v)
    return;
  if (x != x || v < x || (!(x < v) && r < at)) {
    v = x != x ? quiet_nan(x) : x;
    at = r;
  }
}
template <class T>
TCC_KERNEL_FN void pick_min(T &v, int64_t &at, T x, int64_t r) {
  if (v != v)
    return;
  if (x != x || x < v || (!(v < x) && r < at)) {
    v = x != x ? quiet_nan(x) : x;
    at = r;
  }
}
template <class T> TCC_KERNEL_FN T int_max(T a, T b) { return a < b ? b : a; }
template <class T> TCC_KERNEL_FN T int_min(T a, T b) { return b < a ? b : a; }

template <class T> TCC_KERNEL_FN T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}
template <class T> TCC_KERNEL_FN T rsqrt(T x) { return T(1) / sqrt(x); }

// The tanh of the tanh-approximate GELU and its gradient in float: a
// rational minimax approximation (Eigen's generic_fast_tanh_float) with no
// libm call, so the host compiler vectorises the GELU kernels. Its relative
// error against tanh is <= 3.9e-7 (6.5 ulp) over all floats, libm's tanhf's
// <= 1.7e-7 (test/unit/CodegenTest.cpp measures both), so a GELU moves by
// at most ~|x| * 2e-7 from the libm form. The interpreter calls these same
// functions (lib/Interp), and the device runs the same arithmetic, so the
// host kernels, the CUDA kernels and the interpreter stay bit-identical.
// f64 keeps libm's tanh.
TCC_KERNEL_FN float gelu_tanh_of(float x) {
  const float clamp = 7.90531110763549805f;
  float c = x > clamp ? clamp : x; // NaN stays NaN
  c = c < -clamp ? -clamp : c;
  const float c2 = c * c;
  float p = -2.76076847742355e-16f;
  p = p * c2 + 2.00018790482477e-13f;
  p = p * c2 + -8.60467152213735e-11f;
  p = p * c2 + 5.12229709037114e-08f;
  p = p * c2 + 1.48572235717979e-05f;
  p = p * c2 + 6.37261928875436e-04f;
  p = p * c2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * c2 + 1.18534705686654e-04f;
  q = q * c2 + 2.26843463243900e-03f;
  q = q * c2 + 4.89352518554385e-03f;
  float r = c * p / q;
  // Tiny arguments: tanh(x) = x in float; from 9.0109 on tanhf is 1.
  // (Selects, not branches: the host loop stays vectorisable.)
  const float a = x < 0 ? -x : x;
  r = a < 0.0004f ? x : r;
  const float one = x < 0 ? -1.0f : 1.0f;
  return a >= 9.0109f ? one : r;
}
TCC_KERNEL_FN double gelu_tanh_of(double x) { return tanh(x); }

template <class T> TCC_KERNEL_FN T gelu(T x) {
  return T(0.5) * x * (T(1) + erf(x * static_cast<T>(0.7071067811865476)));
}
template <class T> TCC_KERNEL_FN T gelu_tanh(T x) {
  const T k = static_cast<T>(0.7978845608028654); // sqrt(2 / pi)
  return T(0.5) * x * (T(1) + gelu_tanh_of(k * (x + T(0.044715) * x * x * x)));
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
  T t = gelu_tanh_of(sqrt2OverPi * (v + kappa * v * v * v));
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

// 16-byte vector accesses (TCC_VECTOR_LOOP). A thread computes W
// consecutive output elements starting at a multiple of W, W = 16 / the
// widest element size among the kernel's vectorised buffers (4 for f32, 8
// for bf16/f16, 2 for f64/i64, 16 for i1 alone): a buffer of that size is
// read or written with one 16-byte access (ld/st.global.v4.u32), a narrower
// one with one W * size byte access, a wider one with several 16-byte
// ones. Each element is still computed by `element`, alone and in the same
// order of operations, so the results are the scalar loop's bits.
template <class T, int W> struct Lanes {
  T v[W];
};
/// The accesses of W lanes of T: `count` of `bytes` bytes each.
template <class T, int W> struct Access {
  static const int total = W * int(sizeof(T));
  static const int bytes = total < 16 ? total : 16;
  static const int count = total / bytes;
};
/// An unsigned type of N bytes, aligned to N (the vector types on CUDA).
template <int N> struct Word;
#if defined(__CUDACC__)
template <> struct Word<16> { typedef uint4 type; };
template <> struct Word<8> { typedef uint2 type; };
#else
template <> struct Word<16> { struct alignas(16) type { uint32_t x[4]; }; };
template <> struct Word<8> { typedef uint64_t type; };
#endif
template <> struct Word<4> { typedef uint32_t type; };
template <> struct Word<2> { typedef uint16_t type; };

/// Whether `p` is aligned for the vector accesses of W lanes of T.
template <int W, class T> TCC_KERNEL_FN bool lanes_aligned(const T *p) {
  return reinterpret_cast<uintptr_t>(p) % uintptr_t(Access<T, W>::bytes) == 0;
}

#if defined(TCC_KERNEL_EMULATE_CUDA)
#define TCC_COUNT_ACCESS(kind, p, A)                                           \
  (++tcc_k::emu::counters.kind,                                                \
   tcc_k::emu::counters.misaligned +=                                          \
   reinterpret_cast<uintptr_t>(p) % uintptr_t(A::bytes) != 0)
#else
#define TCC_COUNT_ACCESS(kind, p, A) (void)0
#endif

/// The W elements at p (aligned: lanes_aligned).
template <int W, class T> TCC_KERNEL_FN Lanes<T, W> load_lanes(const T *p) {
  typedef Access<T, W> A;
  typedef typename Word<A::bytes>::type V;
  Lanes<T, W> r;
  TCC_COUNT_ACCESS(vector_loads, p, A);
  TCC_UNROLL
  for (int k = 0; k < A::count; ++k) {
#if defined(__CUDACC__)
    // Through the read-only path (ld.global.nc): the inputs of a kernel do
    // not overlap its output, and a generic load would not know the
    // address is global (the pointers come from the `inputs` array).
    V w = __ldg(reinterpret_cast<const V *>(p) + k);
#else
    V w;
    memcpy(&w, reinterpret_cast<const char *>(p) + k * A::bytes, A::bytes);
#endif
    memcpy(reinterpret_cast<char *>(r.v) + k * A::bytes, &w, A::bytes);
  }
  return r;
}

/// Stores W elements at p (aligned: lanes_aligned).
template <int W, class T>
TCC_KERNEL_FN void store_lanes(T *p, const Lanes<T, W> &r) {
  typedef Access<T, W> A;
  typedef typename Word<A::bytes>::type V;
  TCC_COUNT_ACCESS(vector_stores, p, A);
  TCC_UNROLL
  for (int k = 0; k < A::count; ++k) {
    V w;
    memcpy(&w, reinterpret_cast<const char *>(r.v) + k * A::bytes, A::bytes);
#if defined(__CUDACC__)
    reinterpret_cast<V *>(p)[k] = w;
#else
    memcpy(reinterpret_cast<char *>(p) + k * A::bytes, &w, A::bytes);
#endif
  }
}
#undef TCC_COUNT_ACCESS

/// Output elements [c, c + W): the inputs' lanes in, `element` per lane.
template <int W, class F, class TO, class... L>
TCC_KERNEL_FN void vector_chunk(int64_t c, const F &element, TO *out,
                                const L &...lanes) {
  Lanes<TO, W> r;
  TCC_UNROLL
  for (int l = 0; l < W; ++l)
    r.v[l] = element(c + l, lanes.v[l]...);
  store_lanes<W>(out + c, r);
}

#if TCC_KERNEL_GRID
/// The body of TCC_VECTOR_LOOP: false (nothing done) unless `out` and every
/// `in` are aligned for their vector accesses. Else a grid-stride loop over
/// the work items of [begin, end): first the whole W-element chunks at
/// multiples of W, then one item per element left over before the first
/// chunk and after the last. Any launch computes every element once; the
/// CUDA backend's (one thread per element) leaves the threads past the
/// items idle.
template <int W, class F, class TO, class... TI>
TCC_KERNEL_FN bool vector_loop(int64_t begin, int64_t end, const F &element,
                               TO *out, const TI *...in) {
  if (!(lanes_aligned<W>(out) && ... && lanes_aligned<W>(in)))
    return false;
  int64_t first = (begin + W - 1) / W * W, last = end / W * W;
  if (last < first) // no whole chunk
    first = last = end;
  const int64_t chunks = (last - first) / W, head = first - begin;
  const int64_t items = chunks + head + (end - last);
  for (int64_t k = TCC_THREAD_INDEX; k < items; k += TCC_THREAD_COUNT) {
    if (k < chunks) {
      const int64_t c = first + k * W;
      vector_chunk<W>(c, element, out, load_lanes<W>(in + c)...);
    } else {
      const int64_t j = k - chunks;
      const int64_t i = j < head ? begin + j : last + (j - head);
      out[i] = element(i, in[i]...);
    }
  }
  return true;
}
#endif

} // namespace tcc_k

#endif // TCC_RUNTIME_KERNELS_TCC_KERNEL_H
