// attention_bench: tcc's CUDA attention kernels (runtime/kernels/cuda/
// attention*.cu) timed alone at one shape, forward and backward, so that
// two builds of the kernels can be compared on one GPU in one run.
//
//   attention_bench [B H T D]          (default 8 12 1024 64: GPT-2 124M)
//
// Causal self-attention, q/k/v/dout random in [-1, 1), for bf16 (tensor
// cores) and f32 (FMA): the median of 20 timed calls after 3 warm-up ones
// (CUDA events), the backward as tcc's plan runs it (out and lse
// recomputed in the workspace) and given the forward's out and lse, with
// TFLOP/s counting the causal half of the products (forward 2 products,
// backward 5 with the recomputed forward, 4 without). test/gpu/bundle.sh builds it twice, against this tree's
// kernels and against those of the commit in TCC_ATTENTION_AB (see
// test/gpu/bringup.sh), so a change in the kernels shows as two lines.
#include "kernels/cuda/cuda_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "attention_bench: %s: %s\n", what,
                 cudaGetErrorString(e));
    std::exit(1);
  }
}

void checkStatus(tcc::cuda::Status s, const char *what) {
  check(static_cast<cudaError_t>(s), what);
}

uint16_t toBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/// A device buffer of n elements of `bytes` each, random in [-1, 1).
void *randomBuffer(size_t n, size_t bytes, uint32_t seed) {
  std::vector<uint8_t> host(n * bytes);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    float x = float(seed >> 8) / float(1 << 23) - 1.f;
    if (bytes == 2) {
      uint16_t h = toBf16(x);
      std::memcpy(&host[i * 2], &h, 2);
    } else {
      std::memcpy(&host[i * 4], &x, 4);
    }
  }
  void *p = nullptr;
  check(cudaMalloc(&p, host.size()), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  return p;
}

template <class F> double medianMs(F &&call) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  for (int i = 0; i < 3; ++i)
    call();
  std::vector<float> ms;
  for (int i = 0; i < 20; ++i) {
    check(cudaEventRecord(a), "record");
    call();
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int64_t B = 8, H = 12, T = 1024, D = 64;
  if (argc == 5) {
    B = std::atoll(argv[1]);
    H = std::atoll(argv[2]);
    T = std::atoll(argv[3]);
    D = std::atoll(argv[4]);
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: attention_bench [B H T D]\n");
    return 2;
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("attention_bench: no CUDA device: skipped\n");
    return 0;
  }
  const size_t n = size_t(B * H * T * D);
  const double scale = 1.0 / std::sqrt(double(D));
  // Causal: half the score matrix, two products forward, five backward.
  const double flopsFwd = 2.0 * 2.0 * double(B * H) * T * T * D / 2.0;
  const double flopsBwd = 2.5 * flopsFwd;
  for (tcc::cuda::FloatType type :
       {tcc::cuda::FloatType::BF16, tcc::cuda::FloatType::F32}) {
    const size_t e = type == tcc::cuda::FloatType::F32 ? 4 : 2;
    void *q = randomBuffer(n, e, 1), *k = randomBuffer(n, e, 2),
         *v = randomBuffer(n, e, 3), *g = randomBuffer(n, e, 4);
    void *o = randomBuffer(n, e, 5), *dq = randomBuffer(n, e, 6),
         *dk = randomBuffer(n, e, 7), *dv = randomBuffer(n, e, 8);
    void *ws = nullptr;
    check(cudaMalloc(&ws, tcc::cuda::attention_bwd_workspace_bytes(
                              B, H, T, T, D, D, false)),
          "cudaMalloc workspace");
    tcc::cuda::KeyMask mask;
    double fwd = medianMs([&] {
      checkStatus(tcc::cuda::attention_fwd(type, q, k, v, o, B, H, T, T, D, D,
                                           scale, true, mask, nullptr, 0),
                  "attention_fwd");
    });
    double bwd = medianMs([&] {
      checkStatus(tcc::cuda::attention_bwd(type, q, k, v, g, dq, dk, dv, B, H,
                                           T, T, D, D, scale, true, mask,
                                           nullptr, nullptr, ws, 0),
                  "attention_bwd");
    });
    // The backward given the forward's out and log-sum-exp (nothing
    // recomputed; four products).
    float *lse = nullptr;
    check(cudaMalloc(&lse, sizeof(float) * size_t(B * H * T)), "cudaMalloc");
    checkStatus(tcc::cuda::attention_fwd(type, q, k, v, o, B, H, T, T, D, D,
                                         scale, true, mask, lse, 0),
                "attention_fwd with lse");
    double given = medianMs([&] {
      checkStatus(tcc::cuda::attention_bwd(type, q, k, v, g, dq, dk, dv, B, H,
                                           T, T, D, D, scale, true, mask, o,
                                           lse, ws, 0),
                  "attention_bwd given the forward");
    });
    check(cudaDeviceSynchronize(), "attention");
    std::printf("attention %s B=%lld H=%lld T=%lld D=%lld causal: forward "
                "%.3f ms (%.1f TFLOP/s), backward %.3f ms (%.1f TFLOP/s), "
                "backward given out and lse %.3f ms (%.1f TFLOP/s)\n",
                e == 4 ? "f32" : "bf16", (long long)B, (long long)H,
                (long long)T, (long long)D, fwd, flopsFwd / fwd / 1e9, bwd,
                flopsBwd / bwd / 1e9, given, 2.0 * flopsFwd / given / 1e9);
    cudaFree(lse);
    for (void *p : {q, k, v, g, o, dq, dk, dv, ws})
      cudaFree(p);
  }
  return 0;
}
