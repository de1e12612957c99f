// Gradient clipping and the optimizer updates of the training step.
#include "TrainInternal.h"

#include "tcc/TccOps.h"

using namespace mlir;

namespace tcc::train {

static Type elementTypeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType();
}

/// sqrt(sum(g * g)) over all elements, a scalar of g's element type.
static Value l2Norm(OpBuilder &b, Location loc, Value g) {
  Value sq = MulOp::create(b, loc, g, g);
  auto type = llvm::cast<RankedTensorType>(g.getType());
  if (type.getRank() > 0) {
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    sq = ReduceSumOp::create(b, loc, sq, b.getDenseI64ArrayAttr(axes),
                             b.getBoolAttr(false));
  }
  return SqrtOp::create(b, loc, sq);
}

Value globalGradNorm(OpBuilder &b, Location loc, ArrayRef<Value> grads) {
  // As clip_grad_norm_ computes it: the norm of the per-tensor norms, in f32.
  Type f32 = b.getF32Type();
  auto vec1 = RankedTensorType::get({1}, f32);
  SmallVector<Value> norms;
  for (Value g : grads) {
    Value n = l2Norm(b, loc, g);
    if (elementTypeOf(n) != f32)
      n = CastOp::create(b, loc, RankedTensorType::get({}, f32), n);
    norms.push_back(ReshapeOp::create(b, loc, vec1, n));
  }
  Value stacked =
      norms.size() == 1
          ? norms.front()
          : Value(ConcatOp::create(b, loc, norms, b.getI64IntegerAttr(0)));
  return l2Norm(b, loc, stacked);
}

void scaleGradients(OpBuilder &b, Location loc, Value factor,
                    MutableArrayRef<Value> grads) {
  for (Value &g : grads) {
    Value c = factor;
    if (elementTypeOf(g) != elementTypeOf(c))
      c = CastOp::create(b, loc, RankedTensorType::get({}, elementTypeOf(g)),
                         factor);
    g = MulOp::create(b, loc, g, c);
  }
}

void clipGradients(OpBuilder &b, Location loc, double maxNorm, Value total,
                   MutableArrayRef<Value> grads) {
  // clip_coef = max_norm / (total_norm + 1e-6), where Tensor.__rdiv__ is
  // reciprocal() * max_norm; then clamp(max=1.0).
  Type f32 = b.getF32Type();
  Value denom = AddOp::create(b, loc, total, scalarConstant(b, loc, f32, 1e-6));
  Value recip = DivOp::create(b, loc, scalarConstant(b, loc, f32, 1.0), denom);
  Value coef =
      MulOp::create(b, loc, recip, scalarConstant(b, loc, f32, maxNorm));
  coef = MinOp::create(b, loc, coef, scalarConstant(b, loc, f32, 1.0));
  scaleGradients(b, loc, coef, grads);
}

SmallVector<StringRef> stateSlots(const OptimizerSpec &opt) {
  if (opt.kind == OptimizerSpec::AdamW)
    return {"exp_avg", "exp_avg_sq"};
  if (opt.momentum != 0)
    return {"momentum_buffer"};
  return {};
}

SmallVector<Value> buildUpdate(OpBuilder &b, Location loc,
                               const OptimizerSpec &opt, double weightDecay,
                               Value param, Value grad, ValueRange state,
                               Value lr, Value step, Value skip,
                               Value working) {
  Type t = param.getType();
  Type w = working ? working.getType() : Type();
  SmallVector<Value> out;
  if (opt.kind == OptimizerSpec::Sgd) {
    Value buffer = state.empty() ? Value() : state.front();
    auto op = SgdUpdateOp::create(
        b, loc, t, buffer ? t : Type(), w, param, grad, lr, buffer, skip,
        working, llvm::APFloat(opt.momentum), llvm::APFloat(weightDecay),
        opt.nesterov);
    out.push_back(op.getNewParam());
    if (buffer)
      out.push_back(op.getNewMomentumBuffer());
    if (working)
      out.push_back(op.getNewWorking());
    return out;
  }
  auto op = AdamwUpdateOp::create(
      b, loc, t, t, t, w, param, grad, state[0], state[1], lr, step, skip,
      working, llvm::APFloat(opt.beta1), llvm::APFloat(opt.beta2),
      llvm::APFloat(opt.eps), llvm::APFloat(weightDecay));
  out = {op.getNewParam(), op.getNewExpAvg(), op.getNewExpAvgSq()};
  if (working)
    out.push_back(op.getNewWorking());
  return out;
}

} // namespace tcc::train
