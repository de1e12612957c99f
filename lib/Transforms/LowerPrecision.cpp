// tcc-lower-precision: casts a function to bf16/f16 under the policy of
// PrecisionPolicy.cpp.
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/Precision.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace tcc {

#define GEN_PASS_DEF_LOWERPRECISION
#include "tcc/Transforms/Passes.h.inc"

namespace {

bool isFloatTensor(Type t) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(t);
  return tensor && llvm::isa<FloatType>(tensor.getElementType());
}

RankedTensorType withElement(Type t, Type element) {
  return RankedTensorType::get(llvm::cast<RankedTensorType>(t).getShape(),
                               element);
}

class Lowering {
public:
  Lowering(func::FuncOp f, const PrecisionPolicy &policy)
      : f(f), policy(policy), b(f.getContext()) {
    f32 = b.getF32Type();
    low = policy.precision == Precision::BF16 ? Type(b.getBF16Type())
                                              : Type(b.getF16Type());
  }

  LogicalResult run() {
    Block &body = f.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      if (failed(lowerOp(op)))
        return failure();
    // Constants rounded to the low type leave their fp32 originals unused.
    for (Operation &op : llvm::make_early_inc_range(body))
      if (llvm::isa<ConstantOp>(op) && op.use_empty())
        op.erase();
    Operation *ret = body.getTerminator();
    f.setType(b.getFunctionType(f.getArgumentTypes(),
                                TypeRange(ret->getOperandTypes())));
    return success();
  }

private:
  /// Ops the lowering leaves as they are: what it places itself (casts,
  /// constants, parameter reads) and the optimizer's fp32 updates.
  static bool keeps(Operation &op) {
    return llvm::isa<CastOp, ConstantOp, GetParamOp, SgdUpdateOp,
                     AdamwUpdateOp>(op);
  }

  LogicalResult lowerOp(Operation &op) {
    if (keeps(op))
      return success();
    bool floats =
        llvm::any_of(op.getOperandTypes(), isFloatTensor) ||
        llvm::any_of(op.getResultTypes(), isFloatTensor);
    if (!floats)
      return success();
    if (!llvm::isa<TccDialect>(op.getDialect()))
      return op.emitOpError("has no precision rule (not a tcc op)");
    Type target =
        opPrecision(policy, op.getName().stripDialect()) == OpPrecision::Low
            ? low
            : f32;
    b.setInsertionPoint(&op);
    for (OpOperand &use : op.getOpOperands()) {
      Type t = use.get().getType();
      if (isFloatTensor(t) &&
          llvm::cast<RankedTensorType>(t).getElementType() != target)
        use.set(castTo(use.get(), target));
    }
    return retypeResults(op, target);
  }

  /// Results take the types the op infers from its new operands, or the
  /// target element type where it does not infer them.
  LogicalResult retypeResults(Operation &op, Type target) {
    if (auto infer = llvm::dyn_cast<InferTypeOpInterface>(op)) {
      SmallVector<Type> types;
      if (failed(infer.inferReturnTypes(
              op.getContext(), op.getLoc(), op.getOperands(),
              op.getAttrDictionary(), op.getPropertiesStorage(),
              op.getRegions(), types)))
        return op.emitOpError("does not take its operands in ") << target;
      for (auto [r, t] : llvm::zip(op.getResults(), types))
        r.setType(t);
      return success();
    }
    for (Value r : op.getResults())
      if (isFloatTensor(r.getType()))
        r.setType(withElement(r.getType(), target));
    return success();
  }

  /// `v` as `element`. Parameters get a cast per use: the gradients of
  /// separate casts come back to fp32 separately and are summed there, so
  /// a tied weight or a micro-batch loop never sums gradients in 16 bits.
  /// Constants are converted where they are (rounded to nearest even).
  Value castTo(Value v, Type element) {
    Type type = withElement(v.getType(), element);
    if (v.getDefiningOp<GetParamOp>())
      return CastOp::create(b, v.getLoc(), type, v);
    Value &cached = casts[{v, element}];
    if (cached)
      return cached;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(v);
    if (auto constant = v.getDefiningOp<ConstantOp>())
      if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(constant.getValue())) {
        auto &semantics = llvm::cast<FloatType>(element).getFloatSemantics();
        Attribute converted =
            dense.mapValues(element, [&](const llvm::APFloat &x) {
              llvm::APFloat y = x;
              bool lost;
              y.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
              return y.bitcastToAPInt();
            });
        return cached = ConstantOp::create(
                   b, v.getLoc(), llvm::cast<DenseElementsAttr>(converted));
      }
    return cached = CastOp::create(b, v.getLoc(), type, v);
  }

  func::FuncOp f;
  const PrecisionPolicy &policy;
  OpBuilder b;
  Type f32, low;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

struct LowerPrecisionPass : impl::LowerPrecisionBase<LowerPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    PrecisionPolicy policy;
    Location loc = getOperation().getLoc();
    FailureOr<Precision> p = parsePrecision(loc, precision);
    if (failed(p))
      return signalPassFailure();
    policy.precision = *p;
    if (failed(parsePrecisionOverrides(loc, policyText, policy,
                                       /*checkOpKinds=*/true)))
      return signalPassFailure();
    if (failed(lowerPrecision(getOperation(), policy)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult lowerPrecision(func::FuncOp f, const PrecisionPolicy &policy) {
  if (policy.precision == Precision::FP32 || f.isExternal())
    return success();
  if (!f.getBody().hasOneBlock())
    return f.emitError("precision lowering needs a function of one block");
  return Lowering(f, policy).run();
}

} // namespace tcc
