#include "exec/ExecOps.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace tcc::exec;

#define GET_OP_CLASSES
#include "exec/ExecOps.cpp.inc"

namespace tcc::exec {

bool isFusibleOp(Operation *op) {
  // Each of these computes result element i from operand elements at i (or
  // at the broadcast position of i), so a chain of them is one loop.
  return llvm::isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, AndOp, OrOp,
                   CmpOp, WhereOp, NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
                   TanhOp, ErfOp, SigmoidOp, ReluOp, NotOp, CosOp, SinOp,
                   GeluOp, GeluGradOp, CastOp, BroadcastOp>(op);
}

bool isStructuredOp(Operation *op) {
  // Each computes one output element from a few input elements found by
  // index arithmetic on static shapes (a reduction: from a loop over the
  // reduced elements), so it is one generated kernel.
  if (auto grad = llvm::dyn_cast<GatherGradOp>(op))
    return grad.getAxis() != 0; // axis 0 is the embedding-gradient library op
  return llvm::isa<TransposeOp, SliceOp, SliceGradOp, ConcatOp, GatherOp,
                   ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(op);
}

bool isLibraryOp(Operation *op) {
  if (auto grad = llvm::dyn_cast<GatherGradOp>(op))
    return grad.getAxis() == 0;
  return llvm::isa<MatmulOp, GemmOp, LayerNormOp, LayerNormGradOp, SoftmaxOp,
                   SoftmaxGradOp, LogSoftmaxOp, LogSoftmaxGradOp, AttentionOp,
                   AttentionGradOp, CrossEntropyOp, CrossEntropyGradOp,
                   EmbeddingOp, DropoutOp, SgdUpdateOp, AdamwUpdateOp>(op);
}

bool isSplatConstant(Operation *op) {
  auto constant = llvm::dyn_cast<ConstantOp>(op);
  if (!constant)
    return false;
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(constant.getValue()))
    return dense.isSplat();
  return false;
}

} // namespace tcc::exec

Operation *FusionOp::getStructuredOp() {
  for (Operation &op : getBody().front())
    if (isStructuredOp(&op))
      return &op;
  return nullptr;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " operands but its body has "
           << body.getNumArguments() << " arguments";
  for (auto [i, input, arg] : llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("operand #")
             << i << " has type " << input.getType() << " but body argument #"
             << i << " has type " << arg.getType();
  ArrayRef<int64_t> resultShape = shapeOf(getResult());
  Operation *structured = nullptr;
  // Values computed from the structured op's result: the epilogue.
  llvm::DenseSet<Value> epilogue;
  for (Operation &op : body.without_terminator()) {
    if (isStructuredOp(&op)) {
      if (structured)
        return op.emitOpError("is a second layout or reduction op in one "
                              "'exec.fusion' (a kernel holds at most one; "
                              "the first is '")
               << structured->getName() << "')";
      structured = &op;
      if (shapeOf(op.getResult(0)) != resultShape)
        return op.emitOpError("has result type ")
               << op.getResult(0).getType()
               << ", but the layout or reduction op of an 'exec.fusion' must "
                  "have the kernel's result shape ("
               << getResult().getType() << ")";
      epilogue.insert(op.getResult(0));
      continue;
    }
    if (!isFusibleOp(&op) && !isSplatConstant(&op))
      return op.emitOpError("cannot be fused into 'exec.fusion'");
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return epilogue.contains(v); })) {
      if (shapeOf(op.getResult(0)) != resultShape)
        return op.emitOpError("reads the result of '")
               << structured->getName() << "' but has type "
               << op.getResult(0).getType()
               << "; an epilogue op must have the kernel's result shape ("
               << getResult().getType() << ")";
      epilogue.insert(op.getResult(0));
    }
  }
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in 'exec.yield'");
  if (yield.getValue().getType() != getResult().getType())
    return emitOpError("yields ")
           << yield.getValue().getType() << " but its result is "
           << getResult().getType();
  return success();
}
