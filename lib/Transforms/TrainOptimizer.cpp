// Gradient clipping and the optimizer updates of the training step.
#include "TrainInternal.h"

#include "exec/ExecOps.h"

#include "tcc/TccOps.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace tcc::train {

static Type elementTypeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType();
}

/// The squares of a group's gradients written into one vector (one layout
/// kernel, the casts and squares its prologue), zero-padded to rows x
/// columns and summed down the columns (a column reduction, parallel on the
/// GPU): a vector of about sqrt(elements) partial sums in `acc`.
static Value columnSumsOfSquares(OpBuilder &b, Location loc, ValueRange grads,
                                 Type acc) {
  SmallVector<Value> squares;
  int64_t total = 0;
  for (Value g : grads) {
    auto type = llvm::cast<RankedTensorType>(g.getType());
    Value x = g;
    if (type.getElementType() != acc)
      x = CastOp::create(b, loc, RankedTensorType::get(type.getShape(), acc), g);
    Value sq = MulOp::create(b, loc, x, x);
    int64_t n = type.getNumElements();
    total += n;
    if (type.getRank() != 1)
      sq = ReshapeOp::create(b, loc, RankedTensorType::get({n}, acc), sq);
    squares.push_back(sq);
  }
  // About sqrt(total) columns, a multiple of a warp's 32.
  int64_t columns = std::clamp<int64_t>(
      llvm::alignTo(int64_t(std::ceil(std::sqrt(double(total)))), 32), 32,
      8192);
  int64_t rows = std::max<int64_t>(1, llvm::divideCeil(total, columns));
  if (int64_t pad = rows * columns - total) {
    auto padType = RankedTensorType::get({pad}, acc);
    squares.push_back(ConstantOp::create(
        b, loc, DenseElementsAttr::get(padType, b.getFloatAttr(acc, 0.0))));
  }
  Value flat = squares.size() == 1
                   ? squares.front()
                   : Value(ConcatOp::create(b, loc, squares,
                                            b.getI64IntegerAttr(0)));
  Value grid = ReshapeOp::create(
      b, loc, RankedTensorType::get({rows, columns}, acc), flat);
  return ReduceSumOp::create(b, loc, grid, b.getDenseI64ArrayAttr({0}),
                             b.getBoolAttr(false));
}

Value globalGradNorm(OpBuilder &b, Location loc, ArrayRef<Value> grads,
                     bool dataParallel) {
  // sqrt of the sum of g * g over every gradient element; clip_grad_norm_'s
  // norm of the per-tensor norms is the same number up to rounding. The
  // gradients in program order make about kNormGroups groups (each at most
  // kNormGroupBytes of squares; a larger gradient is a group of its own),
  // each reduced to its column sums in two kernels whatever the number of
  // gradients in it; then one kernel concatenates the column sums and one
  // sums them. A group's squares are a transient vector, all gradients
  // being live: small groups keep it below the step's peak. f32, or f64
  // when a gradient is f64 (rounded to f32 last).
  Type f32 = b.getF32Type();
  if (grads.empty())
    return scalarConstant(b, loc, f32, 0.0);
  Type acc = llvm::any_of(grads, [](Value g) { return elementTypeOf(g).isF64(); })
                 ? Type(b.getF64Type())
                 : f32;
  int64_t total = 0;
  for (Value g : grads)
    total += llvm::cast<RankedTensorType>(g.getType()).getNumElements();
  const int64_t limit = std::min<int64_t>(
      kNormGroupBytes / (acc.getIntOrFloatBitWidth() / 8),
      std::max<int64_t>(1, llvm::divideCeil(total, kNormGroups)));
  SmallVector<Value> partials;
  size_t first = 0;
  int64_t elements = 0;
  for (size_t i = 0; i <= grads.size(); ++i) {
    int64_t n = i < grads.size()
                    ? llvm::cast<RankedTensorType>(grads[i].getType())
                          .getNumElements()
                    : 0;
    if (i > first && (i == grads.size() || elements + n > limit)) {
      partials.push_back(columnSumsOfSquares(
          b, loc, ValueRange(grads.slice(first, i - first)), acc));
      first = i;
      elements = 0;
    }
    elements += n;
  }
  Value all = partials.size() == 1
                  ? partials.front()
                  : Value(ConcatOp::create(b, loc, partials,
                                           b.getI64IntegerAttr(0)));
  Value sum = ReduceSumOp::create(b, loc, all, b.getDenseI64ArrayAttr({0}),
                                  b.getBoolAttr(false));
  if (dataParallel)
    sum = exec::AllReduceOp::create(
              b, loc, TypeRange{sum.getType()}, ValueRange{sum},
              exec::ReductionAttr::get(b.getContext(), exec::Reduction::sum),
              b.getI64IntegerAttr(0), b.getI64IntegerAttr(0),
              b.getI64IntegerAttr(0), b.getUnitAttr())
              .getResult(0);
  Value norm = SqrtOp::create(b, loc, sum);
  if (acc != f32)
    norm = CastOp::create(b, loc, RankedTensorType::get({}, f32), norm);
  return norm;
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
