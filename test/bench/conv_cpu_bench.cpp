// The CPU convolution of tcc.conv: im2col + OpenBLAS sgemm (what
// runtime/kernels/cpu/conv.cpp does) against a direct loop, forward and
// backward, on the convolutions of a small ResNet BasicBlock (3x3, pad 1,
// 64 channels, 16x16, batch 4). Built by hand, not by CMake
// (docs/benchmarks.md has the command and the numbers):
//
//   g++ -O2 -std=c++17 -Iruntime test/bench/conv_cpu_bench.cpp \
//     build/runtime/kernels/cpu/libtcc_cpu_kernels.a -lopenblas -o
//     /tmp/conv_bench
//   OPENBLAS_NUM_THREADS=1 /tmp/conv_bench
#include "kernels/cpu/cpu_kernels.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using tcc::kernels::WindowShape;

static void directFwd(const WindowShape &s, const float *x, const float *w,
                      float *y) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t m = 0; m < s.oc; ++m)
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          float acc = 0;
          for (int64_t c = 0; c < s.c; ++c)
            for (int64_t i = 0; i < s.kh; ++i) {
              int64_t iy = s.row(oy, i);
              if (iy < 0 || iy >= s.h)
                continue;
              for (int64_t j = 0; j < s.kw; ++j) {
                int64_t ix = s.col(ox, j);
                if (ix >= 0 && ix < s.w)
                  acc += x[((n * s.c + c) * s.h + iy) * s.w + ix] *
                         w[((m * s.c + c) * s.kh + i) * s.kw + j];
              }
            }
          y[((n * s.oc + m) * s.oh + oy) * s.ow + ox] = acc;
        }
}

static void directBwd(const WindowShape &s, const float *x, const float *w,
                      const float *dy, float *dx, float *dw) {
  std::fill(dx, dx + s.n * s.c * s.h * s.w, 0.0f);
  std::fill(dw, dw + s.oc * s.c * s.kh * s.kw, 0.0f);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t m = 0; m < s.oc; ++m)
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          float d = dy[((n * s.oc + m) * s.oh + oy) * s.ow + ox];
          for (int64_t c = 0; c < s.c; ++c)
            for (int64_t i = 0; i < s.kh; ++i) {
              int64_t iy = s.row(oy, i);
              if (iy < 0 || iy >= s.h)
                continue;
              for (int64_t j = 0; j < s.kw; ++j) {
                int64_t ix = s.col(ox, j);
                if (ix < 0 || ix >= s.w)
                  continue;
                int64_t xi = ((n * s.c + c) * s.h + iy) * s.w + ix;
                int64_t wi = ((m * s.c + c) * s.kh + i) * s.kw + j;
                dx[xi] += d * w[wi];
                dw[wi] += d * x[xi];
              }
            }
        }
}

template <class Fn> static double bestMs(Fn fn) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best,
                    std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

int main() {
  WindowShape s;
  s.n = 4, s.c = 64, s.h = 16, s.w = 16, s.oc = 64, s.kh = 3, s.kw = 3;
  s.padTop = s.padLeft = s.padBottom = s.padRight = 1;
  s.oh = 16, s.ow = 16;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  auto randv = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = nd(rng);
    return v;
  };
  size_t nx = size_t(s.n * s.c * s.h * s.w), nw = size_t(s.oc * s.c * 9);
  std::vector<float> x = randv(nx), w = randv(nw), dy = randv(nx);
  std::vector<float> y1(nx), y2(nx), dx1(nx), dx2(nx), dw1(nw), dw2(nw), db(64);
  double gemmF = bestMs(
      [&] { tcc::cpu::conv2d_fwd(s, x.data(), w.data(), nullptr, y1.data()); });
  double directF = bestMs([&] { directFwd(s, x.data(), w.data(), y2.data()); });
  double gemmB = bestMs([&] {
    tcc::cpu::conv2d_bwd(s, x.data(), w.data(), dy.data(), dx1.data(),
                         dw1.data(), db.data());
  });
  double directB = bestMs([&] {
    directBwd(s, x.data(), w.data(), dy.data(), dx2.data(), dw2.data());
  });
  double err = 0;
  for (size_t i = 0; i < nx; ++i)
    err = std::max(err, double(std::fabs(y1[i] - y2[i])));
  double gflop = 2.0 * double(nx) * 64 * 9 / 1e9;
  std::printf(
      "conv 3x3 64->64 16x16 batch 4 (%.3f GFLOP forward), best of 5:\n",
      gflop);
  std::printf("  forward : im2col+sgemm %.2f ms, direct loop %.2f ms (max "
              "|diff| %.1e)\n",
              gemmF, directF, err);
  std::printf("  backward: im2col+sgemm %.2f ms, direct loop %.2f ms\n", gemmB,
              directB);
  return 0;
}
