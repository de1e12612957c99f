// Helpers of the GPU tests: the device check that turns every test into a
// skip on machines without a GPU, device buffers that poison themselves with
// NaN bytes, random inputs and the tolerance check against float64
// references.
#ifndef TCC_TEST_UNIT_GPU_GPUTESTUTIL_H
#define TCC_TEST_UNIT_GPU_GPUTESTUTIL_H

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcc::gputest {

inline bool haveDevice() {
  static const bool have = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
      n = 0;
    cudaGetLastError(); // clear the "no device" error
    return n > 0;
  }();
  return have;
}

/// Every GPU test derives from this: without a device it prints the skip
/// line and skips, so the ctest entry passes.
class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveDevice()) {
      std::printf("no CUDA device: skipped\n");
      GTEST_SKIP() << "no CUDA device";
    }
  }
};

inline void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Fails the test (by exception, which GoogleTest reports) on a non-zero
/// launcher status.
inline void checkStatus(int status, const char *what) {
  check(static_cast<cudaError_t>(status), what);
}

/// A device buffer of n T (at least one element allocated), freed on scope
/// exit. `offset` elements are skipped at the front, to test unaligned
/// pointers.
template <class T> class DevBuf {
public:
  explicit DevBuf(size_t n, size_t offset = 0) : n_(n), offset_(offset) {
    check(cudaMalloc(reinterpret_cast<void **>(&base_),
                     sizeof(T) * (n + offset + 1)),
          "cudaMalloc");
    poison();
  }
  DevBuf(const std::vector<T> &host, size_t offset = 0)
      : DevBuf(host.size(), offset) {
    upload(host);
  }
  ~DevBuf() { cudaFree(base_); }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;

  T *get() const { return base_ + offset_; }
  size_t size() const { return n_; }
  /// All bytes 0xff: NaN for float and double, -1 for integers.
  void poison() {
    check(cudaMemset(base_, 0xff, sizeof(T) * (n_ + offset_ + 1)),
          "cudaMemset");
  }
  void upload(const std::vector<T> &host) {
    if (!host.empty())
      check(cudaMemcpy(get(), host.data(), sizeof(T) * host.size(),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy H2D");
  }
  std::vector<T> download() const {
    check(cudaDeviceSynchronize(), "kernel");
    std::vector<T> host(n_);
    if (n_)
      check(cudaMemcpy(host.data(), get(), sizeof(T) * n_,
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy D2H");
    return host;
  }

private:
  T *base_ = nullptr;
  size_t n_, offset_;
};

/// Raw device scratch of `bytes` (a workspace), poisoned.
class DevBytes {
public:
  explicit DevBytes(size_t bytes) {
    check(cudaMalloc(&p_, bytes ? bytes : 1), "cudaMalloc");
    check(cudaMemset(p_, 0xff, bytes ? bytes : 1), "cudaMemset");
  }
  ~DevBytes() { cudaFree(p_); }
  DevBytes(const DevBytes &) = delete;
  DevBytes &operator=(const DevBytes &) = delete;
  void *get() const { return p_; }

private:
  void *p_ = nullptr;
};

inline std::vector<float> randomNormal(size_t n, uint32_t seed,
                                       float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

inline std::vector<float> randomUniform(size_t n, uint32_t seed, float lo,
                                        float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// |got - ref| <= tol * (|ref| + scale) element by element, scale being
/// max(max |ref|, floor): a relative error against the tensor's magnitude,
/// so values near zero are not held to a relative bound their rounding
/// cannot meet (`floor` for results that cancel to ~0 from O(floor) terms).
/// NaN must match NaN. With TCC_GPU_TEST_VERBOSE set, prints the worst
/// scaled error of every comparison (to calibrate tolerances on a GPU).
inline void expectClose(const std::vector<float> &got,
                        const std::vector<double> &ref, double tol,
                        const std::string &what, double floor = 0) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double scale = floor;
  for (double r : ref)
    if (std::isfinite(r))
      scale = std::max(scale, std::fabs(r));
  size_t bad = 0, worst = 0;
  double worstErr = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok;
    double err = 0;
    if (std::isnan(ref[i])) {
      ok = std::isnan(got[i]);
      err = ok ? 0 : INFINITY;
    } else if (std::isinf(ref[i])) {
      ok = got[i] == ref[i];
      err = ok ? 0 : INFINITY;
    } else {
      err = std::fabs(double(got[i]) - ref[i]);
      ok = err <= tol * (std::fabs(ref[i]) + scale);
      err /= std::fabs(ref[i]) + scale > 0 ? std::fabs(ref[i]) + scale : 1;
    }
    if (!ok)
      ++bad;
    if (!(err <= worstErr)) {
      worstErr = err;
      worst = i;
    }
  }
  if (std::getenv("TCC_GPU_TEST_VERBOSE") && !got.empty())
    std::printf("  %-16s worst scaled error %.3g (tolerance %.3g)\n",
                what.c_str(), worstErr, tol);
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size()
                     << " elements off; worst at " << worst << ": got "
                     << got[worst] << ", expected " << ref[worst]
                     << " (scaled error " << worstErr << ", tolerance " << tol
                     << ")";
}

template <class T>
inline void expectBitEqual(const std::vector<T> &a, const std::vector<T> &b,
                           const std::string &what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      if (!bad)
        first = i;
      ++bad;
    }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << a.size()
                     << " elements differ in their bits; first at " << first
                     << ": " << a[first] << " vs " << b[first];
}

/// AdamW operands of `count` tensors of `sizes`: parameters, gradients,
/// first and (non-negative) second moments, seeded per tensor.
struct AdamwInputs {
  std::vector<std::vector<float>> p, g, m, v;
};
inline AdamwInputs adamwInputs(const int64_t *sizes, int count) {
  AdamwInputs in;
  for (int t = 0; t < count; ++t) {
    size_t n = size_t(sizes[t]);
    in.p.push_back(randomNormal(n, 10 + t));
    in.g.push_back(randomNormal(n, 20 + t));
    in.m.push_back(randomNormal(n, 30 + t, 0.1f));
    std::vector<float> v = randomNormal(n, 40 + t, 0.01f);
    for (float &x : v)
      x = x * x;
    in.v.push_back(std::move(v));
  }
  return in;
}

} // namespace tcc::gputest

#endif // TCC_TEST_UNIT_GPU_GPUTESTUTIL_H
