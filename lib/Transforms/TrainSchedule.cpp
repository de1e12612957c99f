// The learning-rate schedule, computed in the IR from the step counter so the
// compiled step needs no host-side help. Arithmetic is f64 in the order of
// nanoGPT's get_lr, so the values are the ones Python computes.
#include "TrainInternal.h"

#include "tcc/TccOps.h"

using namespace mlir;

namespace tcc::train {

/// math.pi, the double nearest pi.
static constexpr double kPi = 3.141592653589793;

Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                     double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element =
      llvm::isa<FloatType>(elementType)
          ? Attribute(b.getFloatAttr(elementType, value))
          : Attribute(b.getIntegerAttr(elementType, int64_t(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
}

static Value compare(OpBuilder &b, Location loc, CmpPredicate pred, Value lhs,
                     Value rhs) {
  return CmpOp::create(b, loc, CmpPredicateAttr::get(b.getContext(), pred), lhs,
                       rhs);
}

Value buildLearningRate(OpBuilder &b, Location loc, const OptimizerSpec &opt,
                        const ScheduleSpec &schedule, Value step) {
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  auto cst = [&](double v) { return scalarConstant(b, loc, f64, v); };
  if (schedule.kind == ScheduleSpec::Constant)
    return cst(opt.lr);

  const double lr = opt.lr, minLr = schedule.minLr;
  const int64_t warmup = schedule.warmup, total = schedule.total;
  Value it = CastOp::create(b, loc, RankedTensorType::get({}, f64), step);

  // Decay over [warmup, total): ratio = (it - W) / (N - W).
  Value ratio =
      DivOp::create(b, loc, SubOp::create(b, loc, it, cst(double(warmup))),
                    cst(double(total - warmup)));
  Value decayed, end;
  if (schedule.kind == ScheduleSpec::Cosine) {
    // min_lr + 0.5 * (1 + cos(pi * ratio)) * (lr - min_lr)
    Value angle = MulOp::create(b, loc, cst(kPi), ratio);
    Value coeff = MulOp::create(
        b, loc, cst(0.5),
        AddOp::create(b, loc, cst(1.0), CosOp::create(b, loc, angle)));
    decayed = AddOp::create(b, loc, cst(minLr),
                            MulOp::create(b, loc, coeff, cst(lr - minLr)));
    end = cst(minLr);
  } else {
    // lr * (1 - ratio), never below 0.
    decayed =
        MulOp::create(b, loc, cst(lr), SubOp::create(b, loc, cst(1.0), ratio));
    decayed = MaxOp::create(b, loc, decayed, cst(0.0));
    end = cst(0.0);
  }
  Value afterEnd = compare(b, loc, CmpPredicate::ge, step,
                           scalarConstant(b, loc, i64, total));
  Value lrAt = WhereOp::create(b, loc, afterEnd, end, decayed);
  if (warmup == 0)
    return lrAt;
  // Warmup: lr * (it + 1) / W while it < W.
  Value warm = DivOp::create(
      b, loc,
      MulOp::create(b, loc, cst(lr), AddOp::create(b, loc, it, cst(1.0))),
      cst(double(warmup)));
  Value inWarmup = compare(b, loc, CmpPredicate::lt, step,
                           scalarConstant(b, loc, i64, warmup));
  return WhereOp::create(b, loc, inWarmup, warm, lrAt);
}

} // namespace tcc::train
