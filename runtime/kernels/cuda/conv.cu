// Convolution and pooling over NCHW (window_kernels.h), f32: the forward
// ops per output element; the input gradients per input element, gathering
// the outputs whose windows hold it; the weight gradient per weight element
// over the batch and output positions; the bias gradient per channel.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/window_kernels.h"

namespace tcc::cuda {
namespace {
using namespace detail;
using kernels::WindowShape;

constexpr int kThreads = 256;

int blocksFor(int64_t n) { return int(ceilDiv(n, kThreads)); }

__global__ void convFwdKernel(WindowShape s, const float *x, const float *w,
                              const float *bias, float *y) {
  int64_t t = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  int64_t total = s.n * s.oc * s.oh * s.ow;
  if (t >= total)
    return;
  int64_t ox = t % s.ow, oy = t / s.ow % s.oh, m = t / (s.ow * s.oh) % s.oc,
          n = t / (s.ow * s.oh * s.oc);
  int64_t cg = s.c / s.group, mg = s.oc / s.group;
  float acc = bias ? bias[m] : 0.0f;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const float *plane = x + (n * s.c + m / mg * cg + ci) * s.h * s.w;
    const float *kern = w + (m * cg + ci) * s.kh * s.kw;
    for (int64_t i = 0; i < s.kh; ++i) {
      int64_t iy = s.row(oy, i);
      if (iy < 0 || iy >= s.h)
        continue;
      for (int64_t j = 0; j < s.kw; ++j) {
        int64_t ix = s.col(ox, j);
        if (ix >= 0 && ix < s.w)
          acc += plane[iy * s.w + ix] * kern[i * s.kw + j];
      }
    }
  }
  y[t] = acc;
}

/// Calls fn(oy, ox, i, j) for each output position whose window tap (i, j)
/// reads input (iy, ix).
template <class Fn>
__device__ void windowsOf(const WindowShape &s, int64_t iy, int64_t ix, Fn fn) {
  for (int64_t i = 0; i < s.kh; ++i) {
    int64_t ry = iy + s.padTop - i * s.dh;
    if (ry < 0 || ry % s.sh)
      continue;
    int64_t oy = ry / s.sh;
    if (oy >= s.oh)
      continue;
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t rx = ix + s.padLeft - j * s.dw;
      if (rx < 0 || rx % s.sw)
        continue;
      int64_t ox = rx / s.sw;
      if (ox < s.ow)
        fn(oy, ox, i, j);
    }
  }
}

__global__ void convInputGradKernel(WindowShape s, const float *w,
                                    const float *dy, float *dx) {
  int64_t t = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= s.n * s.c * s.h * s.w)
    return;
  int64_t ix = t % s.w, iy = t / s.w % s.h, c = t / (s.w * s.h) % s.c,
          n = t / (s.w * s.h * s.c);
  int64_t cg = s.c / s.group, mg = s.oc / s.group, g = c / cg;
  float acc = 0.0f;
  for (int64_t mi = 0; mi < mg; ++mi) {
    int64_t m = g * mg + mi;
    const float *grad = dy + (n * s.oc + m) * s.oh * s.ow;
    const float *kern = w + (m * cg + c % cg) * s.kh * s.kw;
    windowsOf(s, iy, ix, [&](int64_t oy, int64_t ox, int64_t i, int64_t j) {
      acc += grad[oy * s.ow + ox] * kern[i * s.kw + j];
    });
  }
  dx[t] = acc;
}

__global__ void convWeightGradKernel(WindowShape s, const float *x,
                                     const float *dy, float *dw) {
  int64_t cg = s.c / s.group, mg = s.oc / s.group;
  int64_t t = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= s.oc * cg * s.kh * s.kw)
    return;
  int64_t j = t % s.kw, i = t / s.kw % s.kh, ci = t / (s.kw * s.kh) % cg,
          m = t / (s.kw * s.kh * cg);
  int64_t c = m / mg * cg + ci;
  float acc = 0.0f;
  for (int64_t n = 0; n < s.n; ++n) {
    const float *plane = x + (n * s.c + c) * s.h * s.w;
    const float *grad = dy + (n * s.oc + m) * s.oh * s.ow;
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      int64_t iy = s.row(oy, i);
      if (iy < 0 || iy >= s.h)
        continue;
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        int64_t ix = s.col(ox, j);
        if (ix >= 0 && ix < s.w)
          acc += grad[oy * s.ow + ox] * plane[iy * s.w + ix];
      }
    }
  }
  dw[t] = acc;
}

__global__ void convBiasGradKernel(WindowShape s, const float *dy, float *db) {
  int64_t m = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (m >= s.oc)
    return;
  int64_t p = s.oh * s.ow;
  double sum = 0;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < p; ++k)
      sum += dy[(n * s.oc + m) * p + k];
  db[m] = float(sum);
}

/// The plane index of the first maximum of (oy, ox)'s window, NaN winning;
/// -1 when no tap is inside the input.
__device__ int64_t argmaxOf(const WindowShape &s, const float *plane,
                            int64_t oy, int64_t ox) {
  int64_t best = -1;
  float bestValue = 0.0f;
  for (int64_t i = 0; i < s.kh; ++i) {
    int64_t iy = s.row(oy, i);
    if (iy < 0 || iy >= s.h)
      continue;
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t ix = s.col(ox, j);
      if (ix < 0 || ix >= s.w)
        continue;
      float v = plane[iy * s.w + ix];
      if (best < 0 || v > bestValue || (isnan(v) && !isnan(bestValue))) {
        best = iy * s.w + ix;
        bestValue = v;
      }
    }
  }
  return best;
}

template <bool Max>
__global__ void poolFwdKernel(WindowShape s, const float *x, float *y) {
  int64_t t = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= s.n * s.c * s.oh * s.ow)
    return;
  int64_t ox = t % s.ow, oy = t / s.ow % s.oh, p = t / (s.ow * s.oh);
  const float *plane = x + p * s.h * s.w;
  if (Max) {
    int64_t at = argmaxOf(s, plane, oy, ox);
    y[t] = at < 0 ? -INFINITY : plane[at];
    return;
  }
  double sum = 0;
  for (int64_t i = 0; i < s.kh; ++i) {
    int64_t iy = s.row(oy, i);
    for (int64_t j = 0; j < s.kw; ++j) {
      int64_t ix = s.col(ox, j);
      if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
        sum += plane[iy * s.w + ix];
    }
  }
  y[t] = float(sum / double(s.count(oy, ox)));
}

template <bool Max>
__global__ void poolBwdKernel(WindowShape s, const float *x, const float *dy,
                              float *dx) {
  int64_t t = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= s.n * s.c * s.h * s.w)
    return;
  int64_t ix = t % s.w, iy = t / s.w % s.h, p = t / (s.w * s.h);
  const float *grad = dy + p * s.oh * s.ow;
  float acc = 0.0f;
  windowsOf(s, iy, ix, [&](int64_t oy, int64_t ox, int64_t, int64_t) {
    if (Max) {
      if (argmaxOf(s, x + p * s.h * s.w, oy, ox) == iy * s.w + ix)
        acc += grad[oy * s.ow + ox];
    } else {
      acc += float(double(grad[oy * s.ow + ox]) / double(s.count(oy, ox)));
    }
  });
  dx[t] = acc;
}

bool valid(const WindowShape &s) {
  return s.n >= 0 && s.c > 0 && s.group > 0 && s.c % s.group == 0 &&
         s.oc % s.group == 0 && s.sh > 0 && s.sw > 0;
}

} // namespace

Status conv2d_fwd(const WindowShape &s, const float *x, const float *w,
                  const float *bias, float *y, cudaStream_t stream) {
  if (!valid(s))
    return invalid();
  int64_t total = s.n * s.oc * s.oh * s.ow;
  if (total > 0)
    convFwdKernel<<<blocksFor(total), kThreads, 0, stream>>>(s, x, w, bias, y);
  return launched();
}

Status conv2d_bwd(const WindowShape &s, const float *x, const float *w,
                  const float *dy, float *dx, float *dw, float *db,
                  cudaStream_t stream) {
  if (!valid(s))
    return invalid();
  int64_t inputs = s.n * s.c * s.h * s.w;
  int64_t weights = s.oc * (s.c / s.group) * s.kh * s.kw;
  if (dx && inputs > 0)
    convInputGradKernel<<<blocksFor(inputs), kThreads, 0, stream>>>(s, w, dy,
                                                                    dx);
  if (dw && weights > 0)
    convWeightGradKernel<<<blocksFor(weights), kThreads, 0, stream>>>(s, x, dy,
                                                                      dw);
  if (db && s.oc > 0)
    convBiasGradKernel<<<blocksFor(s.oc), kThreads, 0, stream>>>(s, dy, db);
  return launched();
}

Status max_pool2d_fwd(const WindowShape &s, const float *x, float *y,
                      cudaStream_t stream) {
  int64_t total = s.n * s.c * s.oh * s.ow;
  if (total > 0)
    poolFwdKernel<true><<<blocksFor(total), kThreads, 0, stream>>>(s, x, y);
  return launched();
}

Status max_pool2d_bwd(const WindowShape &s, const float *x, const float *dy,
                      float *dx, cudaStream_t stream) {
  int64_t total = s.n * s.c * s.h * s.w;
  if (total > 0)
    poolBwdKernel<true>
        <<<blocksFor(total), kThreads, 0, stream>>>(s, x, dy, dx);
  return launched();
}

Status avg_pool2d_fwd(const WindowShape &s, const float *x, float *y,
                      cudaStream_t stream) {
  int64_t total = s.n * s.c * s.oh * s.ow;
  if (total > 0)
    poolFwdKernel<false><<<blocksFor(total), kThreads, 0, stream>>>(s, x, y);
  return launched();
}

Status avg_pool2d_bwd(const WindowShape &s, const float *dy, float *dx,
                      cudaStream_t stream) {
  int64_t total = s.n * s.c * s.h * s.w;
  if (total > 0)
    poolBwdKernel<false>
        <<<blocksFor(total), kThreads, 0, stream>>>(s, nullptr, dy, dx);
  return launched();
}

} // namespace tcc::cuda
