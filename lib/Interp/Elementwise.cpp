// Elementwise kernels: arithmetic, logic, comparisons, select, activations,
// casts and dropout. Binary ops broadcast numpy-style to the result shape.
#include "Kernel.h"
#include "Numerics.h"

#include "tcc/TccOps.h"

#include "kernels/dropout_hash.h"
#include "kernels/tcc_kernel.h"

using namespace mlir;
using tcc::data::Array;
using tcc::data::DType;

namespace tcc::interp {
namespace {

/// The element types an op is defined on (mirrors its ODS operand types).
enum class Domain { Float, Numeric, Bool, Any };

template <Domain D, class Fn> bool visitDomain(DType dtype, Fn &&fn) {
  if constexpr (D == Domain::Float)
    return visitFloat(dtype, fn);
  else if constexpr (D == Domain::Numeric)
    return visitNumeric(dtype, fn);
  else if constexpr (D == Domain::Bool)
    return dtype == DType::Bool && fn(uint8_t{});
  else
    return visitAny(dtype, fn);
}

/// out[i] = f(a[.], b[.]) over the broadcast result shape.
template <class T, class R, class F>
void binaryLoop(const Array &a, const Array &b, Array &out, F f) {
  IndexMap ma = IndexMap::broadcast(a.shape, out.shape);
  IndexMap mb = IndexMap::broadcast(b.shape, out.shape);
  const T *pa = a.data<T>(), *pb = b.data<T>();
  R *po = out.data<R>();
  for (int64_t i = 0, n = out.numElements(); i < n; ++i)
    po[i] = f(pa[ma(i)], pb[mb(i)]);
}

template <Domain D, class F> bool binary(KernelContext &ctx, F f) {
  const Array &a = ctx.in(0u), &b = ctx.in(1u);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    binaryLoop<T, T>(a, b, ctx.out(),
                     [&](T x, T y) { return static_cast<T>(f(x, y)); });
    return true;
  };
  return ctx.finish(visitDomain<D>(a.dtype, compute), a);
}

bool addKernel(KernelContext &ctx) {
  return binary<Domain::Numeric>(ctx,
                                 [](auto a, auto b) { return wrapAdd(a, b); });
}
bool subKernel(KernelContext &ctx) {
  return binary<Domain::Numeric>(ctx,
                                 [](auto a, auto b) { return wrapSub(a, b); });
}
bool mulKernel(KernelContext &ctx) {
  return binary<Domain::Numeric>(ctx,
                                 [](auto a, auto b) { return wrapMul(a, b); });
}
bool maxKernel(KernelContext &ctx) {
  return binary<Domain::Numeric>(ctx,
                                 [](auto a, auto b) { return nanMax(a, b); });
}
bool minKernel(KernelContext &ctx) {
  return binary<Domain::Numeric>(ctx,
                                 [](auto a, auto b) { return nanMin(a, b); });
}
bool powKernel(KernelContext &ctx) {
  return binary<Domain::Float>(ctx,
                               [](auto a, auto b) { return std::pow(a, b); });
}
bool andKernel(KernelContext &ctx) {
  return binary<Domain::Bool>(ctx, [](uint8_t a, uint8_t b) { return a & b; });
}
bool orKernel(KernelContext &ctx) {
  return binary<Domain::Bool>(ctx, [](uint8_t a, uint8_t b) { return a | b; });
}

bool divKernel(KernelContext &ctx) {
  const Array &b = ctx.in(1u);
  // Integer division by zero traps on the host; report it instead.
  bool zero = false;
  if (b.dtype == DType::I32 || b.dtype == DType::I64)
    for (int64_t i = 0, n = b.numElements(); i < n && !zero; ++i)
      zero = readInt(b, i) == 0;
  if (zero)
    return ctx.fail("integer division by zero");
  return binary<Domain::Numeric>(ctx, [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      // min / -1 overflows (and traps); it wraps back to min.
      if (b == T(-1))
        return wrapSub(T(0), a);
    }
    return static_cast<T>(a / b); // integers: C++ truncates toward zero
  });
}

bool cmpKernel(KernelContext &ctx) {
  const Array &a = ctx.in(0u), &b = ctx.in(1u);
  CmpPredicate pred = llvm::cast<CmpOp>(ctx.op).getPredicate();
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    binaryLoop<T, uint8_t>(a, b, ctx.out(), [&](T x, T y) {
      switch (pred) {
      case CmpPredicate::eq:
        return x == y;
      case CmpPredicate::ne:
        return x != y;
      case CmpPredicate::lt:
        return x < y;
      case CmpPredicate::le:
        return x <= y;
      case CmpPredicate::gt:
        return x > y;
      case CmpPredicate::ge:
        return x >= y;
      }
      return false;
    });
    return true;
  };
  return ctx.finish(visitAny(a.dtype, compute), a);
}

bool whereKernel(KernelContext &ctx) {
  const Array &c = ctx.in(0u), &t = ctx.in(1u), &f = ctx.in(2u);
  Array &out = ctx.out();
  IndexMap mc = IndexMap::broadcast(c.shape, out.shape);
  IndexMap mt = IndexMap::broadcast(t.shape, out.shape);
  IndexMap mf = IndexMap::broadcast(f.shape, out.shape);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const uint8_t *pc = c.data<uint8_t>();
    const T *pt = t.data<T>(), *pf = f.data<T>();
    T *po = out.data<T>();
    for (int64_t i = 0, n = out.numElements(); i < n; ++i)
      po[i] = pc[mc(i)] ? pt[mt(i)] : pf[mf(i)];
    return true;
  };
  return ctx.finish(visitAny(t.dtype, compute), t);
}

template <Domain D, class F> bool unary(KernelContext &ctx, F f) {
  const Array &a = ctx.in(0u);
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T *pa = a.data<T>();
    T *po = ctx.out().template data<T>();
    for (int64_t i = 0, n = a.numElements(); i < n; ++i)
      po[i] = static_cast<T>(f(pa[i]));
    return true;
  };
  return ctx.finish(visitDomain<D>(a.dtype, compute), a);
}

bool negKernel(KernelContext &ctx) {
  return unary<Domain::Numeric>(ctx, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>)
      return wrapSub(T(0), x);
    else
      return -x; // not 0 - x, which loses the sign of zero
  });
}
bool absKernel(KernelContext &ctx) {
  return unary<Domain::Numeric>(ctx, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>)
      return x < 0 ? wrapSub(T(0), x) : x;
    else
      return std::fabs(x);
  });
}
bool reluKernel(KernelContext &ctx) {
  // `x < 0 ? 0 : x` keeps NaN, as torch.relu does.
  return unary<Domain::Numeric>(
      ctx, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}
bool expKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::exp(x); });
}
bool logKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::log(x); });
}
bool sqrtKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::sqrt(x); });
}
bool rsqrtKernel(KernelContext &ctx) {
  return unary<Domain::Float>(
      ctx, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}
bool tanhKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::tanh(x); });
}
bool erfKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::erf(x); });
}
bool sigmoidKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) {
    return decltype(x)(1) / (decltype(x)(1) + std::exp(-x));
  });
}
bool cosKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::cos(x); });
}
bool sinKernel(KernelContext &ctx) {
  return unary<Domain::Float>(ctx, [](auto x) { return std::sin(x); });
}
bool notKernel(KernelContext &ctx) {
  return unary<Domain::Bool>(ctx, [](uint8_t x) { return x ? 0 : 1; });
}

bool geluKernel(KernelContext &ctx) {
  if (llvm::cast<GeluOp>(ctx.op).getApproximate() == GeluApprox::tanh)
    // The kernels' formula (runtime/kernels/tcc_kernel.h): its float tanh
    // is a rational approximation, not libm's.
    return unary<Domain::Float>(ctx,
                                [](auto x) { return tcc_k::gelu_tanh(x); });
  return unary<Domain::Float>(ctx, [](auto x) {
    using T = decltype(x);
    return T(0.5) * x *
           (T(1) + std::erf(x * static_cast<T>(0.7071067811865476)));
  });
}

bool castKernel(KernelContext &ctx) {
  const Array &a = ctx.in(0u);
  Array converted;
  if (!convertArray(a, ctx.out().dtype, converted))
    return ctx.unsupportedDType(a);
  ctx.out().bytes = std::move(converted.bytes);
  return true;
}

bool dropoutKernel(KernelContext &ctx) {
  auto op = llvm::cast<DropoutOp>(ctx.op);
  double ratio = op.getRatio().convertToDouble();
  uint64_t seed = static_cast<uint64_t>(op.getSeed());
  if (op.getOffset())
    seed = dropoutSeed(seed, static_cast<uint64_t>(ctx.in(op.getOffset()).data<int64_t>()[0]));
  uint32_t threshold = dropoutKeepThreshold(ratio);
  const Array &a = ctx.in(0u);
  uint8_t *mask = ctx.out(1).data<uint8_t>();
  // Packed tokens: element e of packed row r is element rows[r] * width +
  // e % width of the unpacked input; rows past the count are zero.
  const Array *rows = ctx.opt(op.getRows());
  int64_t width = rows ? a.numElements() / rows->numElements() : 1;
  auto compute = [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - ratio));
    const T *pa = a.data<T>();
    T *po = ctx.out(0).data<T>();
    for (int64_t i = 0, n = a.numElements(); i < n; ++i) {
      int64_t index = i;
      if (rows) {
        int32_t r = rows->data<int32_t>()[i / width];
        index = r < 0 ? -1 : int64_t(r) * width + i % width;
      }
      mask[i] = index >= 0 && dropoutKeep(seed, uint64_t(index), threshold);
      po[i] = mask[i] ? pa[i] * scale : T(0);
    }
    return true;
  };
  return ctx.finish(visitFloat(a.dtype, compute), a);
}

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  t[AddOp::getOperationName()] = addKernel;
  t[SubOp::getOperationName()] = subKernel;
  t[MulOp::getOperationName()] = mulKernel;
  t[DivOp::getOperationName()] = divKernel;
  t[PowOp::getOperationName()] = powKernel;
  t[MaxOp::getOperationName()] = maxKernel;
  t[MinOp::getOperationName()] = minKernel;
  t[AndOp::getOperationName()] = andKernel;
  t[OrOp::getOperationName()] = orKernel;
  t[CmpOp::getOperationName()] = cmpKernel;
  t[WhereOp::getOperationName()] = whereKernel;
  t[NegOp::getOperationName()] = negKernel;
  t[AbsOp::getOperationName()] = absKernel;
  t[ReluOp::getOperationName()] = reluKernel;
  t[ExpOp::getOperationName()] = expKernel;
  t[LogOp::getOperationName()] = logKernel;
  t[SqrtOp::getOperationName()] = sqrtKernel;
  t[RsqrtOp::getOperationName()] = rsqrtKernel;
  t[TanhOp::getOperationName()] = tanhKernel;
  t[ErfOp::getOperationName()] = erfKernel;
  t[SigmoidOp::getOperationName()] = sigmoidKernel;
  t[CosOp::getOperationName()] = cosKernel;
  t[SinOp::getOperationName()] = sinKernel;
  t[NotOp::getOperationName()] = notKernel;
  t[GeluOp::getOperationName()] = geluKernel;
  t[CastOp::getOperationName()] = castKernel;
  t[DropoutOp::getOperationName()] = dropoutKernel;
}

} // namespace tcc::interp
