//===- window.h - sizes of a 2-D convolution or pooling ---------*- C++ -*-===//
//
// What the CPU and CUDA kernels of tcc.conv, tcc.max_pool, tcc.avg_pool and
// their backward ops take: NCHW input [n, c, h, w], output [n, oc, oh, ow]
// (oc = c for pooling), the window (kernel, stride, padding, dilation), the
// group count of a convolution and avg_pool's count_include_pad. The plan
// executor fills it from the call's shapes and attributes (plan/calls.cpp
// checked that they agree).
//
// Plain C++ with no dependencies; marked for CUDA when compiled by nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_KERNELS_WINDOW_H
#define TCC_KERNELS_WINDOW_H

#include "kernels/host_device.h"

#include <cstdint>

namespace tcc::kernels {

struct WindowShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t oc = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dh = 1, dw = 1;
  int64_t group = 1;
  bool countIncludePad = false;

  /// Input row / column of tap (i, j) of output (y, x); may be outside.
  TCC_HOST_DEVICE int64_t row(int64_t y, int64_t i) const {
    return y * sh - padTop + i * dh;
  }
  TCC_HOST_DEVICE int64_t col(int64_t x, int64_t j) const {
    return x * sw - padLeft + j * dw;
  }
  /// avg_pool's divisor for output (y, x): the taps inside the input, or
  /// with count_include_pad those inside the padded input.
  TCC_HOST_DEVICE int64_t count(int64_t y, int64_t x) const {
    int64_t lo = countIncludePad ? -padTop : 0;
    int64_t hiR = countIncludePad ? h + padBottom : h;
    int64_t loC = countIncludePad ? -padLeft : 0;
    int64_t hiC = countIncludePad ? w + padRight : w;
    int64_t rows = 0, cols = 0;
    for (int64_t i = 0; i < kh; ++i) {
      int64_t r = row(y, i);
      rows += r >= lo && r < hiR;
    }
    for (int64_t j = 0; j < kw; ++j) {
      int64_t cc = col(x, j);
      cols += cc >= loC && cc < hiC;
    }
    int64_t k = rows * cols;
    return k < 1 ? 1 : k;
  }
};

} // namespace tcc::kernels

#endif // TCC_KERNELS_WINDOW_H
