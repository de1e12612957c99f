// Folds the residual gradient's add and the row sum of a layer norm's input
// gradient into tcc.layer_norm_grad (the pass reference,
// include/tcc/Transforms/Passes.td, has the rules). The layer norm's
// gradient call passes over every row and sums over the rows anyway, so
// neither the add nor the sum costs a kernel launch of its own. The add is
// rounded once with the gradient instead of after it, so results change by
// rounding, not bit for bit.
#include "Dataflow.h"

#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tcc {
#define GEN_PASS_DEF_FUSELAYERNORMGRAD
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

/// `grad` rebuilt in its place with `residual` as its residual_grad and,
/// `withSum`, an input_grad_sum result; its results replace the old ones.
LayerNormGradOp rebuild(LayerNormGradOp grad, Value residual, bool withSum) {
  OpBuilder b(grad);
  auto fused = LayerNormGradOp::create(
      b, grad.getLoc(), grad.getInput(), grad.getScale(), grad.getResultGrad(),
      residual, grad.getAxisAttr(), grad.getEpsilonAttr(), withSum);
  // Over packed token rows as the gradient was (tcc-pack-tokens).
  if (Attribute rows = grad->getAttr(kTokenRowsAttr))
    fused->setAttr(kTokenRowsAttr, rows);
  for (unsigned i = 0; i < grad->getNumResults(); ++i)
    grad->getResult(i).replaceAllUsesWith(fused->getResult(i));
  grad->erase();
  return fused;
}

/// add(ln_grad#0, g) -> ln_grad with residual g, when the add alone reads
/// the input gradient and the layer norm's gradient depends on g. Not when
/// the gradient already sums its input gradient (a sum folded before the
/// add): that sum is of the gradient without g.
bool foldAdd(AddOp add) {
  for (unsigned i = 0; i < 2; ++i) {
    Value dx = add->getOperand(i), other = add->getOperand(1 - i);
    auto grad = dx.getDefiningOp<LayerNormGradOp>();
    if (!grad || dx != grad.getInputGrad() || !dx.hasOneUse() ||
        grad.getResidualGrad() || grad.getInputGradSum() ||
        other.getType() != dx.getType() || add.getType() != dx.getType() ||
        !dependsOn(grad, other))
      continue;
    LayerNormGradOp fused = rebuild(grad, other, /*withSum=*/false);
    add.getResult().replaceAllUsesWith(fused.getInputGrad());
    add.erase();
    return true;
  }
  return false;
}

/// reduce_sum over every row of ln_grad#0 (directly, or of a reshape that
/// keeps the normalised dims last) -> ln_grad's input_grad_sum. For 16-bit
/// input the sum is f32 (as the parameters' gradients): the fold takes a
/// 16-bit sum read only by its cast to f32 (the master weight's gradient),
/// which it replaces.
bool foldSum(ReduceSumOp sum) {
  Value in = sum.getInput();
  if (auto view = in.getDefiningOp<ReshapeOp>())
    in = view.getInput();
  auto grad = in.getDefiningOp<LayerNormGradOp>();
  if (!grad || in != grad.getInputGrad() || grad.getInputGradSum())
    return false;
  // What the fold replaces: the sum, or the cast of a 16-bit sum to f32.
  Type sumType = grad.getScaleGrad().getType();
  Value replaced = sum.getResult();
  CastOp cast;
  if (sum.getType() != sumType) {
    if (!sum->hasOneUse())
      return false;
    cast = llvm::dyn_cast<CastOp>(*sum->user_begin());
    if (!cast || cast.getType() != sumType)
      return false;
    replaced = cast.getResult();
  }
  // The summed dims are the leading ones, and what is left is the
  // normalised dims (the result type says which, and no keepdims).
  int64_t rank = tensorTypeOf(sum.getInput()).getRank();
  int64_t kept = tensorTypeOf(sum).getRank();
  ArrayRef<int64_t> axes = sum.getAxes();
  if (sum.getKeepdims() || int64_t(axes.size()) != rank - kept ||
      tensorTypeOf(sum.getInput()).getShape().take_back(kept) !=
          tensorTypeOf(sum).getShape())
    return false;
  for (int64_t i = 0, e = axes.size(); i < e; ++i)
    if (axes[i] != i)
      return false;
  LayerNormGradOp fused =
      rebuild(grad, grad.getResidualGrad(), /*withSum=*/true);
  replaced.replaceAllUsesWith(fused.getInputGradSum());
  Operation *view = sum.getInput().getDefiningOp<ReshapeOp>();
  if (cast)
    cast.erase();
  sum.erase();
  if (view && view->use_empty())
    view->erase();
  return true;
}

struct FuseLayerNormGradPass
    : tcc::impl::FuseLayerNormGradBase<FuseLayerNormGradPass> {
  using FuseLayerNormGradBase::FuseLayerNormGradBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    unsigned added = 0, summed = 0;
    // Top-level ops only, in order: a residual folds before the sum of the
    // gradient it makes. The candidates are collected first: a fold erases
    // ops after its add or sum (a cast) and before it.
    SmallVector<Operation *> candidates;
    for (Block &block : func.getBody())
      for (Operation &op : block)
        if (llvm::isa<AddOp, ReduceSumOp>(op))
          candidates.push_back(&op);
    for (Operation *op : candidates) {
      if (auto add = llvm::dyn_cast<AddOp>(op))
        added += foldAdd(add);
      else
        summed += foldSum(llvm::cast<ReduceSumOp>(op));
    }
    residuals += added;
    sums += summed;
    if (report)
      emitRemark(func.getLoc())
          << "tcc-fuse-layer-norm-grad: @" << func.getSymName() << ": "
          << added << " residual adds and " << summed
          << " sums folded into layer_norm_grad";
  }
};

} // namespace
