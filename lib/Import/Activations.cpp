//===- Activations.cpp - LeakyRelu, Elu, Softplus, HardSwish, ... ---------===//
//
// The activation functions ONNX names as ops of their own, which PyTorch's
// exporters emit for nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU, nn.PReLU,
// nn.Softplus, nn.Softsign, nn.Hardsigmoid, nn.Hardswish and nn.Mish, and
// ThresholdedRelu. Each is built from tcc's elementwise
// ops (cmp, where, exp, log, tanh, ...), so autodiff, fusion, precision and
// every backend need nothing new; one fused kernel computes it.
//
// The gradients are PyTorch's: where(x > 0, ...) takes the negative side at
// x == 0, as torch's backward formulas test `x > 0`; the clamps of
// HardSigmoid are where()s, so the gradient is 0 on the flat parts and at
// their edges, as hardsigmoid_backward's open interval. The exponential of
// a branch that is not taken reads where(x > t, 0, x), so it stays finite
// and its gradient (0 times exp) never becomes 0 * inf = NaN.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "tcc/TccOps.h"

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// Builds one activation from x, failing once for any op that fails.
class Builder {
public:
  explicit Builder(NodeImporter &n) : n(n), x(n.input(0)) {
    elem = n.inputElementType(0);
  }

  Value c(double v) { return n.scalar(elem, v); }
  Value gt(Value a, Value b) {
    return make([&] { return n.create<CmpOp>(CmpPredicate::gt, a, b); }, a, b);
  }
  Value lt(Value a, Value b) {
    return make([&] { return n.create<CmpOp>(CmpPredicate::lt, a, b); }, a, b);
  }
  Value where(Value cond, Value a, Value b) {
    if (!cond)
      return fail();
    return make([&] { return n.create<WhereOp>(cond, a, b); }, a, b);
  }
  Value add(Value a, Value b) {
    return make([&] { return n.create<AddOp>(a, b); }, a, b);
  }
  Value sub(Value a, Value b) {
    return make([&] { return n.create<SubOp>(a, b); }, a, b);
  }
  Value mul(Value a, Value b) {
    return make([&] { return n.create<MulOp>(a, b); }, a, b);
  }
  Value div(Value a, Value b) {
    return make([&] { return n.create<DivOp>(a, b); }, a, b);
  }
  Value exp(Value a) {
    return make([&] { return n.create<ExpOp>(a); }, a, a);
  }
  Value log(Value a) {
    return make([&] { return n.create<LogOp>(a); }, a, a);
  }
  Value tanh(Value a) {
    return make([&] { return n.create<TanhOp>(a); }, a, a);
  }
  Value abs(Value a) {
    return make([&] { return n.create<AbsOp>(a); }, a, a);
  }

  /// alpha * (exp(x / scale) - 1) where x <= 0, x elsewhere: ELU (scale 1)
  /// and CELU (scale alpha).
  Value elu(double alpha, double scale) {
    Value positive = gt(x, c(0.0));
    Value neg = where(positive, c(0.0), x);
    if (scale != 1.0)
      neg = div(neg, c(scale));
    return where(positive, x, mul(c(alpha), sub(exp(neg), c(1.0))));
  }
  /// log(1 + exp(x)), x itself beyond 20 as torch.nn.Softplus's threshold
  /// (the two agree in float there).
  Value softplus() {
    Value big = gt(x, c(20.0));
    return where(big, x, log(add(exp(where(big, c(0.0), x)), c(1.0))));
  }
  /// max(0, min(1, alpha * x + beta)).
  Value hardSigmoid(double alpha, double beta) {
    Value t = add(mul(x, c(alpha)), c(beta));
    Value low = where(gt(t, c(0.0)), t, c(0.0));
    return where(lt(low, c(1.0)), low, c(1.0));
  }

  LogicalResult finish(Value result) {
    if (failed || !result)
      return failure();
    return n.setOutput(0, result);
  }

  NodeImporter &n;
  Value x;
  Type elem;

private:
  bool failed = false;
  Value fail() {
    failed = true;
    return {};
  }
  template <class F> Value make(F &&create, Value a, Value b) {
    if (failed || !a || !b)
      return fail();
    auto op = create();
    if (mlir::failed(op))
      return fail();
    return op->getResult();
  }
};

/// Checks one float input (two for PRelu) and the known attributes.
LogicalResult expect(NodeImporter &n, int inputs,
                     std::initializer_list<llvm::StringRef> attrs) {
  if (failed(n.expectInputs(inputs, inputs)) || failed(n.expectAttrs(attrs)))
    return failure();
  if (!llvm::isa<FloatType>(n.inputElementType(0)))
    return n.unsupported("not defined for non-float tensors");
  return success();
}

LogicalResult convertLeakyRelu(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha"})))
    return failure();
  Builder b(n);
  double alpha = n.floatAttr("alpha", 0.01);
  return b.finish(b.where(b.gt(b.x, b.c(0.0)), b.x, b.mul(b.x, b.c(alpha))));
}

LogicalResult convertPRelu(NodeImporter &n) {
  if (failed(expect(n, 2, {})))
    return failure();
  Builder b(n);
  return b.finish(b.where(b.gt(b.x, b.c(0.0)), b.x, b.mul(b.x, n.input(1))));
}

LogicalResult convertThresholdedRelu(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha"})))
    return failure();
  Builder b(n);
  return b.finish(
      b.where(b.gt(b.x, b.c(n.floatAttr("alpha", 1.0))), b.x, b.c(0.0)));
}

LogicalResult convertElu(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha"})))
    return failure();
  Builder b(n);
  return b.finish(b.elu(n.floatAttr("alpha", 1.0), 1.0));
}

LogicalResult convertCelu(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha"})))
    return failure();
  double alpha = n.floatAttr("alpha", 1.0);
  if (alpha == 0.0)
    return n.fail("alpha must not be 0");
  Builder b(n);
  return b.finish(b.elu(alpha, alpha));
}

LogicalResult convertSelu(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha", "gamma"})))
    return failure();
  Builder b(n);
  // ONNX's defaults are SELU's constants (float-rounded, as torch's).
  double alpha = n.floatAttr("alpha", 1.67326319217681884765625);
  double gamma = n.floatAttr("gamma", 1.05070102214813232421875);
  return b.finish(b.mul(b.c(gamma), b.elu(alpha, 1.0)));
}

LogicalResult convertSoftplus(NodeImporter &n) {
  if (failed(expect(n, 1, {})))
    return failure();
  Builder b(n);
  return b.finish(b.softplus());
}

LogicalResult convertSoftsign(NodeImporter &n) {
  if (failed(expect(n, 1, {})))
    return failure();
  Builder b(n);
  return b.finish(b.div(b.x, b.add(b.c(1.0), b.abs(b.x))));
}

LogicalResult convertMish(NodeImporter &n) {
  if (failed(expect(n, 1, {})))
    return failure();
  Builder b(n);
  return b.finish(b.mul(b.x, b.tanh(b.softplus())));
}

LogicalResult convertHardSigmoid(NodeImporter &n) {
  if (failed(expect(n, 1, {"alpha", "beta"})))
    return failure();
  Builder b(n);
  return b.finish(
      b.hardSigmoid(n.floatAttr("alpha", 0.2), n.floatAttr("beta", 0.5)));
}

LogicalResult convertHardSwish(NodeImporter &n) {
  if (failed(expect(n, 1, {})))
    return failure();
  Builder b(n);
  return b.finish(b.mul(b.x, b.hardSigmoid(1.0 / 6.0, 0.5)));
}

} // namespace

void registerActivationConverters(ConverterTable &table) {
  table["LeakyRelu"] = convertLeakyRelu;
  table["PRelu"] = convertPRelu;
  table["ThresholdedRelu"] = convertThresholdedRelu;
  table["Elu"] = convertElu;
  table["Celu"] = convertCelu;
  table["Selu"] = convertSelu;
  table["Softplus"] = convertSoftplus;
  table["Softsign"] = convertSoftsign;
  table["Mish"] = convertMish;
  table["HardSigmoid"] = convertHardSigmoid;
  table["HardSwish"] = convertHardSwish;
}

} // namespace tcc::onnx_import
