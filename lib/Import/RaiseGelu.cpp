// GELU has no ONNX op before opset 20, so PyTorch exports
//   exact: x * 0.5 * (1 + erf(x / sqrt(2)))            (Div, Erf, Add, Mul,
//   Mul) tanh:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// with x^3 as Pow(x, 3) or Mul(x, Mul(x, x)), and the products in any order.
// Products are flattened into a scale and a list of factors, so one matcher
// covers every association and operand order; inner values must have no
// other users, so nothing is computed twice after the rewrite.
#include "Importer.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// The value of a one-element (or splat) float constant.
std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) ||
      !llvm::isa<FloatType>(attr.getElementType()) ||
      !(attr.isSplat() || attr.getNumElements() == 1))
    return std::nullopt;
  return (*attr.value_begin<APFloat>()).convertToDouble();
}

/// Constants are stored in f32, so compare with a relative tolerance well
/// below the gap to any other plausible constant.
bool near(std::optional<double> a, double b) {
  return a && std::fabs(*a - b) <= 1e-5 * std::fabs(b);
}

struct Product {
  double scale = 1.0;
  llvm::SmallVector<Value> factors;
};

/// Flattens the product computing `v` into `p`. Only `v` itself may have
/// other users; shared sub-products stay opaque factors.
void flatten(Value v, Product &p, bool isRoot = false) {
  if (auto c = splatValue(v)) {
    p.scale *= *c;
    return;
  }
  Operation *def = v.getDefiningOp();
  if (!def || (!isRoot && !v.hasOneUse())) {
    p.factors.push_back(v);
    return;
  }
  if (auto mul = llvm::dyn_cast<MulOp>(def)) {
    flatten(mul.getLhs(), p);
    flatten(mul.getRhs(), p);
    return;
  }
  if (auto div = llvm::dyn_cast<DivOp>(def)) {
    if (auto c = splatValue(div.getRhs()); c && *c != 0) {
      flatten(div.getLhs(), p);
      p.scale /= *c;
      return;
    }
  }
  if (auto pow = llvm::dyn_cast<PowOp>(def)) {
    auto e = splatValue(pow.getRhs());
    if (e && (*e == 2.0 || *e == 3.0)) {
      for (int k = 0; k < int(*e); ++k)
        p.factors.push_back(pow.getLhs());
      return;
    }
  }
  p.factors.push_back(v);
}

/// For `1 + f(t)` (either order, single use): f's op, else null.
Operation *onePlus(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || !v.hasOneUse())
    return nullptr;
  Value other;
  if (near(splatValue(add.getLhs()), 1.0))
    other = add.getRhs();
  else if (near(splatValue(add.getRhs()), 1.0))
    other = add.getLhs();
  if (!other || !other.hasOneUse())
    return nullptr;
  return other.getDefiningOp();
}

bool isProductOf(Value v, Value x, size_t count, double scale) {
  Product p;
  flatten(v, p);
  return near(p.scale, scale) && p.factors.size() == count &&
         llvm::all_of(p.factors, [&](Value f) { return f == x; });
}

/// tanh's argument: sqrt(2/pi) * (x + 0.044715 * x^3).
bool isTanhGeluArg(Value arg, Value x) {
  Product p;
  flatten(arg, p);
  if (!near(p.scale, std::sqrt(2.0 / M_PI)) || p.factors.size() != 1)
    return false;
  auto add = p.factors[0].getDefiningOp<AddOp>();
  if (!add || !p.factors[0].hasOneUse())
    return false;
  Value cube = add.getLhs() == x ? add.getRhs() : add.getLhs();
  if (add.getLhs() != x && add.getRhs() != x)
    return false;
  return cube.hasOneUse() && isProductOf(cube, x, 3, 0.044715);
}

struct RaiseGeluPattern : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    Product p;
    flatten(root.getResult(), p, /*isRoot=*/true);
    if (p.factors.size() != 2 || !near(p.scale, 0.5))
      return rewriter.notifyMatchFailure(root, "not 0.5 * x * (...)");
    for (int i : {0, 1}) {
      Value x = p.factors[i];
      if (x.getType() != root.getType() ||
          !llvm::isa<FloatType>(getElementTypeOrSelf(x.getType())))
        continue;
      Operation *f = onePlus(p.factors[1 - i]);
      if (!f)
        continue;
      std::optional<GeluApprox> approx;
      if (auto erf = llvm::dyn_cast<ErfOp>(f);
          erf && isProductOf(erf.getInput(), x, 1, M_SQRT1_2))
        approx = GeluApprox::none;
      else if (auto tanh = llvm::dyn_cast<TanhOp>(f);
               tanh && isTanhGeluArg(tanh.getInput(), x))
        approx = GeluApprox::tanh;
      if (!approx)
        continue;
      rewriter.replaceOpWithNewOp<GeluOp>(root, x, *approx);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "not an exact or tanh GELU");
  }
};

} // namespace

void raiseGelu(Operation *func) {
  RewritePatternSet patterns(func->getContext());
  patterns.add<RaiseGeluPattern>(func->getContext());
  // Not converging is harmless here: whatever was not raised stays correct.
  (void)applyPatternsGreedily(func->getRegion(0), std::move(patterns));
}

} // namespace tcc::onnx_import
