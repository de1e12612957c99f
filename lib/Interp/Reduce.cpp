// Reductions and row-wise normalisations: reduce_{sum,mean,max,min},
// softmax, log_softmax, layer_norm. See Numerics.h for the accumulation rule.
#include "Kernel.h"
#include "Numerics.h"

#include "tcc/TccOps.h"

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

enum class ReduceKind { Sum, Mean, Max, Min };

/// For each input element, the output element it reduces into: the output
/// laid out with keepdims (same element order either way) and stride 0 on
/// the reduced dims.
IndexMap reductionMap(llvm::ArrayRef<int64_t> inShape,
                      llvm::ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(inShape);
  for (int64_t a : axes)
    kept[a] = 1;
  SmallVector<int64_t> strides = stridesOf(kept);
  for (int64_t a : axes)
    strides[a] = 0;
  return IndexMap::strided(inShape, strides);
}

template <ReduceKind K> bool reduceKernel(KernelContext &ctx) {
  const Array &in = ctx.in(0u);
  Array &out = ctx.out();
  llvm::ArrayRef<int64_t> axes;
  if (auto op = llvm::dyn_cast<ReduceSumOp>(ctx.op))
    axes = op.getAxes();
  else if (auto op = llvm::dyn_cast<ReduceMeanOp>(ctx.op))
    axes = op.getAxes();
  else if (auto op = llvm::dyn_cast<ReduceMaxOp>(ctx.op))
    axes = op.getAxes();
  else
    axes = llvm::cast<ReduceMinOp>(ctx.op).getAxes();
  IndexMap map = reductionMap(in.shape, axes);
  int64_t count = 1;
  for (int64_t a : axes)
    count *= in.shape[a];

  auto compute = [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<K == ReduceKind::Sum || K == ReduceKind::Mean,
                                 Acc<T>, T>;
    // An empty max is -inf (the lowest int), an empty min +inf.
    A init = 0;
    if constexpr (K == ReduceKind::Max)
      init = std::numeric_limits<T>::has_infinity
                 ? -std::numeric_limits<T>::infinity()
                 : std::numeric_limits<T>::lowest();
    if constexpr (K == ReduceKind::Min)
      init = std::numeric_limits<T>::has_infinity
                 ? std::numeric_limits<T>::infinity()
                 : std::numeric_limits<T>::max();
    std::vector<A> acc(out.numElements(), init);
    const T *pi = in.data<T>();
    for (int64_t i = 0, n = in.numElements(); i < n; ++i) {
      A &a = acc[map(i)];
      if constexpr (K == ReduceKind::Max)
        a = nanMax(a, pi[i]);
      else if constexpr (K == ReduceKind::Min)
        a = nanMin(a, pi[i]);
      else
        a = wrapAdd<A>(a, pi[i]);
    }
    T *po = out.data<T>();
    for (size_t o = 0; o < acc.size(); ++o) {
      if constexpr (K != ReduceKind::Mean)
        po[o] = static_cast<T>(acc[o]);
      else if constexpr (std::is_floating_point_v<T>)
        po[o] = static_cast<T>(acc[o] / static_cast<double>(count));
      else // integer mean truncates; an empty one is 0, not a trap
        po[o] = count ? static_cast<T>(acc[o] / count) : T(0);
    }
    return true;
  };
  return ctx.finish(visitNumeric(in.dtype, compute), in);
}

bool softmaxKernel(KernelContext &ctx) {
  const Array &in = ctx.in(0u);
  int64_t axis = llvm::cast<SoftmaxOp>(ctx.op).getAxis();
  int64_t len = in.shape[axis];
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    ctx.out().bytes = in.bytes;
    T *po = ctx.out().data<T>();
    forEachRow(in.shape, axis, [&](int64_t base, int64_t stride) {
      softmaxRow(po + base, len, stride);
    });
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

bool logSoftmaxKernel(KernelContext &ctx) {
  const Array &in = ctx.in(0u);
  int64_t axis = llvm::cast<LogSoftmaxOp>(ctx.op).getAxis();
  int64_t len = in.shape[axis];
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *pi = in.data<T>();
    T *po = ctx.out().data<T>();
    forEachRow(in.shape, axis, [&](int64_t base, int64_t stride) {
      // x - max - log(sum(exp(x - max))): exp never
      // overflows, and the largest entry's
      // log-probability is exactly -log(sum) with sum
      // >= 1.
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < len; ++j)
        m = nanMax(m, pi[base + j * stride]);
      double sum = 0;
      for (int64_t j = 0; j < len; ++j)
        sum += std::exp(pi[base + j * stride] - m);
      T logSum = static_cast<T>(std::log(sum));
      for (int64_t j = 0; j < len; ++j)
        po[base + j * stride] = pi[base + j * stride] - m - logSum;
    });
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

bool layerNormKernel(KernelContext &ctx) {
  auto op = llvm::cast<LayerNormOp>(ctx.op);
  const Array &in = ctx.in(op.getInput());
  const Array *scale = ctx.opt(op.getScale()), *bias = ctx.opt(op.getBias());
  int64_t axis = op.getAxis();
  double eps = op.getEpsilon().convertToDouble();
  int64_t rows = product(llvm::ArrayRef(in.shape).take_front(axis));
  int64_t len = product(llvm::ArrayRef(in.shape).drop_front(axis));
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *pi = in.data<T>();
    const T *ps = scale ? scale->data<T>() : nullptr;
    const T *pb = bias ? bias->data<T>() : nullptr;
    T *po = ctx.out().data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T *x = pi + r * len;
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < len; ++j)
        sum += x[j];
      double mean = sum / len;
      // Two passes: the biased variance of the centred values,
      // which does not cancel catastrophically like E[x^2] -
      // E[x]^2.
      for (int64_t j = 0; j < len; ++j)
        sq += (x[j] - mean) * (x[j] - mean);
      T mu = static_cast<T>(mean);
      T rstd = static_cast<T>(1.0 / std::sqrt(sq / len + eps));
      for (int64_t j = 0; j < len; ++j) {
        T y = (x[j] - mu) * rstd;
        if (ps)
          y = y * ps[j];
        if (pb)
          y = y + pb[j];
        po[r * len + j] = y;
      }
    }
    return true;
  };
  return ctx.finish(visitFloat(in.dtype, compute), in);
}

} // namespace

void registerReduceKernels(KernelTable &t) {
  t[ReduceSumOp::getOperationName()] = reduceKernel<ReduceKind::Sum>;
  t[ReduceMeanOp::getOperationName()] = reduceKernel<ReduceKind::Mean>;
  t[ReduceMaxOp::getOperationName()] = reduceKernel<ReduceKind::Max>;
  t[ReduceMinOp::getOperationName()] = reduceKernel<ReduceKind::Min>;
  t[SoftmaxOp::getOperationName()] = softmaxKernel;
  t[LogSoftmaxOp::getOperationName()] = logSoftmaxKernel;
  t[LayerNormOp::getOperationName()] = layerNormKernel;
}

} // namespace tcc::interp
