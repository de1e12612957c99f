// Dynamic loss scaling of the training step, as IR: the overflow check
// and the scale's backoff and growth (the optimizer updates take the
// overflow flag as their `skip` operand). The scale seeds
// the backward pass (TrainStep.cpp), so the loss value itself is never
// scaled and the step reports the true loss even on a skipped step.
#include "TrainInternal.h"

#include "tcc/TccOps.h"

#include <limits>

using namespace mlir;

namespace tcc::train {

static Value cmp(OpBuilder &b, Location loc, CmpPredicate pred, Value lhs,
                 Value rhs) {
  return CmpOp::create(b, loc, CmpPredicateAttr::get(b.getContext(), pred),
                       lhs, rhs);
}

Value isFinite(OpBuilder &b, Location loc, Value norm) {
  // NaN compares false, so one comparison rejects inf and NaN.
  Type f32 = b.getF32Type();
  return cmp(b, loc, CmpPredicate::lt, norm,
             scalarConstant(b, loc, f32,
                            std::numeric_limits<double>::infinity()));
}

ScaleState updateLossScale(OpBuilder &b, Location loc, Value ok,
                           const ScaleState &s, int64_t growthInterval) {
  // torch.cuda.amp.GradScaler's rule with backoff 0.5 and growth 2.
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto f = [&](double v) { return scalarConstant(b, loc, f32, v); };
  auto i = [&](int64_t v) { return scalarConstant(b, loc, i64, double(v)); };
  Value good = AddOp::create(b, loc, s.goodSteps, i(1));
  Value grow = cmp(b, loc, CmpPredicate::ge, good, i(growthInterval));
  Value kept = WhereOp::create(b, loc, grow,
                               MulOp::create(b, loc, s.scale, f(2.0)), s.scale);
  ScaleState next;
  // A grown scale that overflows float32 stays where it was.
  Value grownFinite = isFinite(b, loc, kept);
  kept = WhereOp::create(b, loc, grownFinite, kept, s.scale);
  next.scale = WhereOp::create(b, loc, ok, kept,
                               MulOp::create(b, loc, s.scale, f(0.5)));
  next.goodSteps = WhereOp::create(
      b, loc, ok, WhereOp::create(b, loc, grow, i(0), good), i(0));
  next.skipped = AddOp::create(b, loc, s.skipped,
                               WhereOp::create(b, loc, ok, i(0), i(1)));
  return next;
}

} // namespace tcc::train
