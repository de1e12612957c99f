#include "exec/ExecOps.h"

#include "mlir/IR/OpImplementation.h"

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
  for (Operation &op : body.without_terminator())
    if (!isFusibleOp(&op) && !isSplatConstant(&op))
      return op.emitOpError("cannot be fused into 'exec.fusion'");
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in 'exec.yield'");
  if (yield.getValue().getType() != getResult().getType())
    return emitOpError("yields ")
           << yield.getValue().getType() << " but its result is "
           << getResult().getType();
  return success();
}
