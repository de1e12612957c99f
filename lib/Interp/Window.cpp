// Convolution and pooling: conv, max_pool, avg_pool and their backward ops,
// as direct loops over the window (accumulating in double), the reference
// the runtime's kernels are tested against; and batch_norm as its
// `training` attribute says (the step functions hold it expanded).
#include "Kernel.h"

#include "tcc/TccBatchNorm.h"
#include "tcc/TccOps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// Sizes of a window op: input [n, c, h, w], output [n, oc, oh, ow].
struct Geometry {
  Window2d win;
  int64_t n, c, h, w, oc, oh, ow;
  Geometry(const Window2d &win, llvm::ArrayRef<int64_t> in,
           llvm::ArrayRef<int64_t> out)
      : win(win), n(in[0]), c(in[1]), h(in[2]), w(in[3]), oc(out[1]),
        oh(out[2]), ow(out[3]) {}
  /// Calls fn(iy, ix, tap) for each window tap of output (y, x) that lies
  /// inside the input; `tap` counts every tap, padding included.
  template <class Fn> void taps(int64_t y, int64_t x, Fn fn) const {
    for (int64_t i = 0; i < win.kh; ++i) {
      int64_t iy = y * win.sh - win.padTop + i * win.dh;
      for (int64_t j = 0; j < win.kw; ++j) {
        int64_t ix = x * win.sw - win.padLeft + j * win.dw;
        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
          fn(iy, ix, i * win.kw + j);
      }
    }
  }
  /// The taps of output (y, x) that avg_pool divides by.
  int64_t count(int64_t y, int64_t x, bool includePad) const {
    if (!includePad) {
      int64_t k = 0;
      taps(y, x, [&](int64_t, int64_t, int64_t) { ++k; });
      return k;
    }
    // Padding counts, but not the part of a window past the padded input.
    int64_t y0 = y * win.sh - win.padTop, x0 = x * win.sw - win.padLeft;
    int64_t rows = 0, cols = 0;
    for (int64_t i = 0; i < win.kh; ++i)
      rows += y0 + i * win.dh < h + win.padBottom;
    for (int64_t j = 0; j < win.kw; ++j)
      cols += x0 + j * win.dw < w + win.padRight;
    return rows * cols;
  }
};

bool convKernel(KernelContext &ctx) {
  auto op = llvm::cast<ConvOp>(ctx.op);
  const Array &in = ctx.in(op.getInput()), &wt = ctx.in(op.getWeight());
  const Array *bias = ctx.opt(op.getBias());
  Geometry g(op.getWindow(), in.shape, ctx.out().shape);
  int64_t group = op.getGroup(), cg = g.c / group, mg = g.oc / group;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *x = in.data<T>(), *k = wt.data<T>();
    const T *b = bias ? bias->data<T>() : nullptr;
    T *out = ctx.out().data<T>();
    for (int64_t ni = 0; ni < g.n; ++ni)
      for (int64_t m = 0; m < g.oc; ++m)
        for (int64_t y = 0; y < g.oh; ++y)
          for (int64_t xo = 0; xo < g.ow; ++xo) {
            double acc = b ? double(b[m]) : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              int64_t cin = m / mg * cg + ci;
              const T *plane = x + (ni * g.c + cin) * g.h * g.w;
              const T *kern = k + (m * cg + ci) * g.win.kh * g.win.kw;
              g.taps(y, xo, [&](int64_t iy, int64_t ix, int64_t t) {
                acc += double(plane[iy * g.w + ix]) * double(kern[t]);
              });
            }
            out[((ni * g.oc + m) * g.oh + y) * g.ow + xo] = T(acc);
          }
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

bool convGradKernel(KernelContext &ctx) {
  auto op = llvm::cast<ConvGradOp>(ctx.op);
  const Array &in = ctx.in(op.getInput()), &wt = ctx.in(op.getWeight());
  const Array &dy = ctx.in(op.getResultGrad());
  Geometry g(op.getWindow(), in.shape, dy.shape);
  int64_t group = op.getGroup(), cg = g.c / group, mg = g.oc / group;
  int64_t taps = g.win.kh * g.win.kw;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *x = in.data<T>(), *k = wt.data<T>(), *gy = dy.data<T>();
    std::vector<double> dx(size_t(in.numElements()), 0.0),
        dw(size_t(wt.numElements()), 0.0), db(size_t(g.oc), 0.0);
    for (int64_t ni = 0; ni < g.n; ++ni)
      for (int64_t m = 0; m < g.oc; ++m)
        for (int64_t y = 0; y < g.oh; ++y)
          for (int64_t xo = 0; xo < g.ow; ++xo) {
            double d = double(gy[((ni * g.oc + m) * g.oh + y) * g.ow + xo]);
            db[m] += d;
            for (int64_t ci = 0; ci < cg; ++ci) {
              int64_t plane = (ni * g.c + m / mg * cg + ci) * g.h * g.w;
              int64_t kern = (m * cg + ci) * taps;
              g.taps(y, xo, [&](int64_t iy, int64_t ix, int64_t t) {
                int64_t xi = plane + iy * g.w + ix;
                dx[xi] += d * double(k[kern + t]);
                dw[kern + t] += d * double(x[xi]);
              });
            }
          }
    auto store = [](const std::vector<double> &from, Array &to) {
      T *p = to.data<T>();
      for (size_t i = 0; i < from.size(); ++i)
        p[i] = T(from[i]);
    };
    store(dx, ctx.out(0));
    store(dw, ctx.out(1));
    store(db, ctx.out(2));
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

/// The input index (within its plane) of the first maximum of output (y, x)'s
/// window; -1 when no tap lies inside the input. NaN wins, as in PyTorch.
template <class T>
int64_t argmax(const Geometry &g, const T *plane, int64_t y, int64_t x) {
  int64_t best = -1;
  double bestValue = -std::numeric_limits<double>::infinity();
  g.taps(y, x, [&](int64_t iy, int64_t ix, int64_t) {
    double v = double(plane[iy * g.w + ix]);
    if (best < 0 || v > bestValue ||
        (std::isnan(v) && !std::isnan(bestValue))) {
      best = iy * g.w + ix;
      bestValue = v;
    }
  });
  return best;
}

template <bool Max> bool poolKernel(KernelContext &ctx) {
  Operation *op = ctx.op;
  const Array &in = ctx.in(0u);
  Window2d win;
  bool includePad = false;
  if constexpr (Max) {
    win = llvm::cast<MaxPoolOp>(op).getWindow();
  } else {
    auto avg = llvm::cast<AvgPoolOp>(op);
    win = avg.getWindow();
    includePad = avg.getCountIncludePad();
  }
  Geometry g(win, in.shape, ctx.out().shape);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    T *out = ctx.out().data<T>();
    for (int64_t p = 0; p < g.n * g.c; ++p) {
      const T *plane = in.data<T>() + p * g.h * g.w;
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          double v = 0;
          if constexpr (Max) {
            int64_t at = argmax(g, plane, y, x);
            v = at < 0 ? -std::numeric_limits<double>::infinity()
                       : double(plane[at]);
          } else {
            g.taps(y, x, [&](int64_t iy, int64_t ix, int64_t) {
              v += double(plane[iy * g.w + ix]);
            });
            v /= double(std::max<int64_t>(1, g.count(y, x, includePad)));
          }
          out[(p * g.oh + y) * g.ow + x] = T(v);
        }
    }
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

template <bool Max> bool poolGradKernel(KernelContext &ctx) {
  Operation *op = ctx.op;
  const Array &in = ctx.in(0u), &dy = ctx.in(1u);
  Window2d win;
  bool includePad = false;
  if constexpr (Max) {
    win = llvm::cast<MaxPoolGradOp>(op).getWindow();
  } else {
    auto avg = llvm::cast<AvgPoolGradOp>(op);
    win = avg.getWindow();
    includePad = avg.getCountIncludePad();
  }
  Geometry g(win, in.shape, dy.shape);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> dx(size_t(in.numElements()), 0.0);
    for (int64_t p = 0; p < g.n * g.c; ++p) {
      const T *plane = in.data<T>() + p * g.h * g.w;
      double *dplane = dx.data() + p * g.h * g.w;
      for (int64_t y = 0; y < g.oh; ++y)
        for (int64_t x = 0; x < g.ow; ++x) {
          double d = double(dy.data<T>()[(p * g.oh + y) * g.ow + x]);
          if constexpr (Max) {
            if (int64_t at = argmax(g, plane, y, x); at >= 0)
              dplane[at] += d;
          } else {
            d /= double(std::max<int64_t>(1, g.count(y, x, includePad)));
            g.taps(y, x, [&](int64_t iy, int64_t ix, int64_t) {
              dplane[iy * g.w + ix] += d;
            });
          }
        }
    }
    T *out = ctx.out().data<T>();
    for (size_t i = 0; i < dx.size(); ++i)
      out[i] = T(dx[i]);
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

/// ONNX's BatchNormalization: per channel, mean and biased variance in
/// double over every dim but 1 in training mode, the given ones otherwise.
bool batchNormKernel(KernelContext &ctx) {
  auto op = llvm::cast<BatchNormOp>(ctx.op);
  const Array &in = ctx.in(op.getInput());
  int64_t n = in.shape[0], c = in.shape[1], inner = 1;
  for (size_t d = 2; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  double eps = op.getEpsilon().convertToDouble(),
         momentum = op.getMomentum().convertToDouble();
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *x = in.data<T>();
    const T *scale = ctx.in(op.getScale()).data<T>(),
            *bias = ctx.in(op.getBias()).data<T>(),
            *mean = ctx.in(op.getMean()).data<T>(),
            *var = ctx.in(op.getVar()).data<T>();
    T *y = ctx.out(0).data<T>(), *newMean = ctx.out(1).data<T>(),
      *newVar = ctx.out(2).data<T>();
    for (int64_t ch = 0; ch < c; ++ch) {
      double m = double(mean[ch]), v = double(var[ch]);
      auto at = [&](int64_t b, int64_t i) { return (b * c + ch) * inner + i; };
      if (op.getTraining()) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < inner; ++i)
            sum += double(x[at(b, i)]);
        double bm = sum / double(n * inner);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < inner; ++i)
            sq += (double(x[at(b, i)]) - bm) * (double(x[at(b, i)]) - bm);
        double bv = sq / double(n * inner);
        newMean[ch] = T(m * momentum + bm * (1 - momentum));
        newVar[ch] = T(v * momentum + bv * (1 - momentum));
        m = bm;
        v = bv;
      } else {
        newMean[ch] = mean[ch];
        newVar[ch] = var[ch];
      }
      double factor = double(scale[ch]) / std::sqrt(v + eps);
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i)
          y[at(b, i)] =
              T((double(x[at(b, i)]) - m) * factor + double(bias[ch]));
    }
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

} // namespace

void registerWindowKernels(KernelTable &t) {
  t[BatchNormOp::getOperationName()] = batchNormKernel;
  t[ConvOp::getOperationName()] = convKernel;
  t[ConvGradOp::getOperationName()] = convGradKernel;
  t[MaxPoolOp::getOperationName()] = poolKernel<true>;
  t[AvgPoolOp::getOperationName()] = poolKernel<false>;
  t[MaxPoolGradOp::getOperationName()] = poolGradKernel<true>;
  t[AvgPoolGradOp::getOperationName()] = poolGradKernel<false>;
}

} // namespace tcc::interp
