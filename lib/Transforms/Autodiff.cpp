// Reverse-mode autodiff: a backward walk over the ops of one block, asking
// each op on the path from the inputs to the loss for its VJP.
#include "tcc/Transforms/Autodiff.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace tcc {

static bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && llvm::isa<FloatType>(t.getElementType());
}

static Value zerosOf(OpBuilder &b, Location loc, Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
}

FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss, Value seed,
                                             ValueRange wrt, bool wrtInUseOrder) {
  Block *block = loss.getParentBlock();
  Location loc = loss.getLoc();

  // Ops whose results depend on a wrt value (forward reachability), in order.
  llvm::DenseSet<Value> varies(wrt.begin(), wrt.end());
  SmallVector<Operation *> active;
  for (Operation &op : *block) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (llvm::none_of(op.getOperands(), [&](Value v) { return varies.contains(v); }))
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r))
        varies.insert(r);
    active.push_back(&op);
  }

  llvm::DenseMap<Value, Value> grads;
  grads[loss] = seed;
  // With wrtInUseOrder: a wrt value's contributions, last use first.
  llvm::DenseMap<Value, SmallVector<Value, 2>> deferred;
  llvm::DenseSet<Value> wrtSet(wrt.begin(), wrt.end());
  auto accumulate = [&](Value v, Value g) {
    if (wrtInUseOrder && wrtSet.contains(v)) {
      deferred[v].push_back(g);
      return;
    }
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(builder, loc, it->second, g);
  };

  for (Operation *op : llvm::reverse(active)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      continue; // the loss does not depend on this op
    auto diff = llvm::dyn_cast<DifferentiableOpInterface>(op);
    if (!diff)
      return op->emitOpError("has no gradient rule, but the loss depends on it "
                             "through a differentiated value");
    SmallVector<Value> operandGrads;
    OpBuilder::InsertionGuard guard(builder);
    if (failed(diff.buildVjp(builder, resultGrads, operandGrads)))
      return failure();
    assert(operandGrads.size() == op->getNumOperands() && "one gradient per operand");
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g || !varies.contains(operand))
        continue;
      if (g.getType() != operand.getType()) {
        // A gradient wider than its 16-bit operand (layer_norm_grad's f32
        // scale and bias sums): an operand cast from the gradient's type (a
        // parameter's per-use cast) passes it on unrounded, as the cast's
        // own rule would after rounding; elsewhere it is cast to the operand.
        auto cast = operand.getDefiningOp<CastOp>();
        if (cast && cast.getInput().getType() == g.getType() &&
            varies.contains(cast.getInput())) {
          accumulate(cast.getInput(), g);
          continue;
        }
        g = CastOp::create(builder, loc, operand.getType(), g);
      }
      accumulate(operand, g);
    }
  }

  for (Value v : wrt) {
    auto it = deferred.find(v);
    if (it == deferred.end())
      continue;
    ArrayRef<Value> parts = it->second;
    Value sum = parts.back();
    for (Value g : llvm::reverse(parts.drop_back()))
      sum = AddOp::create(builder, loc, sum, g);
    grads[v] = sum;
    deferred.erase(it);
  }
  SmallVector<Value> result;
  for (Value v : wrt) {
    Value g = grads.lookup(v);
    result.push_back(g ? g : zerosOf(builder, loc, v.getType()));
  }
  return result;
}

#define GEN_PASS_DEF_AUTODIFF
#include "tcc/Transforms/Passes.h.inc"

namespace {
/// For every function marked `tcc.differentiate` whose first result is a
/// float scalar, adds `<name>_grad` returning the original results followed
/// by the gradient of the first result w.r.t. every float argument.
struct AutodiffPass : impl::AutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> todo;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("tcc.differentiate"))
        todo.push_back(f);
    for (func::FuncOp f : todo)
      if (failed(differentiate(f)))
        return signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp f) {
    if (!f.getBody().hasOneBlock())
      return f.emitOpError("tcc-autodiff needs a single-block function");
    auto results = f.getFunctionType().getResults();
    auto lossType = results.empty() ? nullptr : llvm::dyn_cast<RankedTensorType>(results[0]);
    if (!lossType || lossType.getRank() != 0 || !llvm::isa<FloatType>(lossType.getElementType()))
      return f.emitOpError("tcc-autodiff needs a scalar float first result");

    OpBuilder b(f);
    b.setInsertionPointAfter(f);
    auto grad = llvm::cast<func::FuncOp>(b.clone(*f));
    grad.setName((f.getName() + "_grad").str());
    grad->removeAttr("tcc.differentiate");
    Block &body = grad.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> wrt;
    for (BlockArgument a : body.getArguments())
      if (isFloatTensor(a))
        wrt.push_back(a);
    b.setInsertionPoint(ret);
    Value seed = ConstantOp::create(
        b, ret.getLoc(),
        DenseElementsAttr::get(lossType, b.getFloatAttr(lossType.getElementType(), 1.0)));
    auto grads = buildGradients(b, ret.getOperand(0), seed, wrt);
    if (failed(grads))
      return failure();
    SmallVector<Value> outs(ret.getOperands());
    llvm::append_range(outs, *grads);
    func::ReturnOp::create(b, ret.getLoc(), outs);
    ret.erase();
    SmallVector<Type> types = llvm::to_vector(ValueRange(outs).getTypes());
    grad.setType(b.getFunctionType(grad.getArgumentTypes(), types));
    return success();
  }
};
} // namespace

} // namespace tcc
