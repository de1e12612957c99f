// tcc.conv, tcc.conv_grad: im2col + OpenBLAS sgemm per image and group
// (docs/benchmarks.md has the measurement against a direct loop); the
// pooling ops and their gradients: direct loops over each window.
#include "kernels/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tcc::cpu {

using kernels::WindowShape;

namespace {

/// The [cg * kh * kw, oh * ow] column matrix of group `g` of one image
/// (zeros for padding taps).
void im2col(const WindowShape &s, const float *image, int64_t g, float *col) {
  int64_t cg = s.c / s.group, p = s.oh * s.ow;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const float *plane = image + (g * cg + ci) * s.h * s.w;
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        float *row = col + ((ci * s.kh + i) * s.kw + j) * p;
        for (int64_t y = 0; y < s.oh; ++y) {
          int64_t iy = s.row(y, i);
          for (int64_t x = 0; x < s.ow; ++x) {
            int64_t ix = s.col(x, j);
            row[y * s.ow + x] = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w
                                    ? plane[iy * s.w + ix]
                                    : 0.0f;
          }
        }
      }
  }
}

/// Adds the column matrix back into group `g` of one image's gradient.
void col2im(const WindowShape &s, const float *col, int64_t g, float *image) {
  int64_t cg = s.c / s.group, p = s.oh * s.ow;
  for (int64_t ci = 0; ci < cg; ++ci) {
    float *plane = image + (g * cg + ci) * s.h * s.w;
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        const float *row = col + ((ci * s.kh + i) * s.kw + j) * p;
        for (int64_t y = 0; y < s.oh; ++y) {
          int64_t iy = s.row(y, i);
          if (iy < 0 || iy >= s.h)
            continue;
          for (int64_t x = 0; x < s.ow; ++x) {
            int64_t ix = s.col(x, j);
            if (ix >= 0 && ix < s.w)
              plane[iy * s.w + ix] += row[y * s.ow + x];
          }
        }
      }
  }
}

} // namespace

void conv2d_fwd(const WindowShape &s, const float *x, const float *w,
                const float *bias, float *y) {
  int64_t cg = s.c / s.group, mg = s.oc / s.group;
  int64_t k = cg * s.kh * s.kw, p = s.oh * s.ow;
  std::vector<float> col(size_t(k * p));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      im2col(s, x + n * s.c * s.h * s.w, g, col.data());
      float *out = y + (n * s.oc + g * mg) * p;
      gemm(false, false, 1, mg, p, k, 1.0f, w + g * mg * k, 0, col.data(), 0,
           0.0f, out, 0);
      if (bias)
        for (int64_t m = 0; m < mg; ++m)
          for (int64_t i = 0; i < p; ++i)
            out[m * p + i] += bias[g * mg + m];
    }
}

void conv2d_bwd(const WindowShape &s, const float *x, const float *w,
                const float *dy, float *dx, float *dw, float *db) {
  int64_t cg = s.c / s.group, mg = s.oc / s.group;
  int64_t k = cg * s.kh * s.kw, p = s.oh * s.ow;
  std::vector<float> col(size_t(k * p));
  if (dx)
    std::fill(dx, dx + s.n * s.c * s.h * s.w, 0.0f);
  if (db)
    for (int64_t m = 0; m < s.oc; ++m) {
      double sum = 0;
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t i = 0; i < p; ++i)
          sum += dy[(n * s.oc + m) * p + i];
      db[m] = float(sum);
    }
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      const float *grad = dy + (n * s.oc + g * mg) * p;
      if (dw) {
        // dW_g += dY_g [mg, p] @ col^T [p, k]
        im2col(s, x + n * s.c * s.h * s.w, g, col.data());
        gemm(false, true, 1, mg, k, p, 1.0f, grad, 0, col.data(), 0,
             n == 0 ? 0.0f : 1.0f, dw + g * mg * k, 0);
      }
      if (dx) {
        // dcol = W_g^T [k, mg] @ dY_g [mg, p], scattered back.
        gemm(true, false, 1, k, p, mg, 1.0f, w + g * mg * k, 0, grad, 0, 0.0f,
             col.data(), 0);
        col2im(s, col.data(), g, dx + n * s.c * s.h * s.w);
      }
    }
}

namespace {
/// The plane index of the first maximum of output (y, x)'s window (NaN
/// wins), -1 when no tap is inside the input.
int64_t argmax(const WindowShape &s, const float *plane, int64_t y, int64_t x) {
  int64_t best = -1;
  float bestValue = 0;
  for (int64_t i = 0; i < s.kh; ++i) {
    int64_t iy = s.row(y, i);
    if (iy < 0 || iy >= s.h)
      continue;
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t ix = s.col(x, j);
      if (ix < 0 || ix >= s.w)
        continue;
      float v = plane[iy * s.w + ix];
      if (best < 0 || v > bestValue ||
          (std::isnan(v) && !std::isnan(bestValue))) {
        best = iy * s.w + ix;
        bestValue = v;
      }
    }
  }
  return best;
}
} // namespace

void max_pool2d_fwd(const WindowShape &s, const float *x, float *y) {
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float *plane = x + p * s.h * s.w;
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        int64_t at = argmax(s, plane, oy, ox);
        y[(p * s.oh + oy) * s.ow + ox] =
            at < 0 ? -std::numeric_limits<float>::infinity() : plane[at];
      }
  }
}

void max_pool2d_bwd(const WindowShape &s, const float *x, const float *dy,
                    float *dx) {
  std::fill(dx, dx + s.n * s.c * s.h * s.w, 0.0f);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float *plane = x + p * s.h * s.w;
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox)
        if (int64_t at = argmax(s, plane, oy, ox); at >= 0)
          dx[p * s.h * s.w + at] += dy[(p * s.oh + oy) * s.ow + ox];
  }
}

void avg_pool2d_fwd(const WindowShape &s, const float *x, float *y) {
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float *plane = x + p * s.h * s.w;
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        double sum = 0;
        for (int64_t i = 0; i < s.kh; ++i) {
          int64_t iy = s.row(oy, i);
          for (int64_t j = 0; j < s.kw; ++j) {
            int64_t ix = s.col(ox, j);
            if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
              sum += plane[iy * s.w + ix];
          }
        }
        y[(p * s.oh + oy) * s.ow + ox] = float(sum / double(s.count(oy, ox)));
      }
  }
}

void avg_pool2d_bwd(const WindowShape &s, const float *dy, float *dx) {
  std::fill(dx, dx + s.n * s.c * s.h * s.w, 0.0f);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    float *plane = dx + p * s.h * s.w;
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        float d = float(double(dy[(p * s.oh + oy) * s.ow + ox]) /
                        double(s.count(oy, ox)));
        for (int64_t i = 0; i < s.kh; ++i) {
          int64_t iy = s.row(oy, i);
          for (int64_t j = 0; j < s.kw; ++j) {
            int64_t ix = s.col(ox, j);
            if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
              plane[iy * s.w + ix] += d;
          }
        }
      }
  }
}

} // namespace tcc::cpu
