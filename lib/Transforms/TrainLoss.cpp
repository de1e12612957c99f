// The loss of the training step: cross-entropy over logits and new integer
// labels, mean squared error against a new target, or a scalar the forward
// graph already computes.
#include "TrainInternal.h"

#include "exec/ExecOps.h"

#include "tcc/TccOps.h"

using namespace mlir;

namespace tcc::train {

static std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

static std::string resultName(func::FuncOp f, unsigned i) {
  auto name = f.getResultAttrOfType<StringAttr>(i, kNameAttr);
  return name ? name.str() : "output" + std::to_string(i);
}

LogicalResult planLoss(func::FuncOp forward, const LossSpec &spec,
                       LossPlan &plan) {
  plan = LossPlan();
  plan.spec = spec;
  std::optional<unsigned> found;
  std::string names;
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    std::string n = resultName(forward, i);
    names += (i ? ", '" : "'") + n + "'";
    if (n == spec.output)
      found = i;
  }
  if (!found)
    return forward.emitError() << "the loss reads output '" << spec.output
                               << "', but @forward's outputs are " << names;
  plan.output = *found;
  auto type = llvm::cast<RankedTensorType>(forward.getResultTypes()[*found]);
  if (!llvm::isa<FloatType>(type.getElementType()))
    return forward.emitError() << "the loss needs a float output, but '"
                               << spec.output << "' is " << typeStr(type);

  switch (spec.kind) {
  case LossSpec::Output:
    if (type.getNumElements() != 1)
      return forward.emitError()
             << "output '" << spec.output
             << "' is used as the loss, so it must be a "
             << "scalar, but it is " << typeStr(type)
             << " (use cross_entropy(...) or mse(...) to reduce it)";
    return success();
  case LossSpec::CrossEntropy:
    if (type.getRank() < 1)
      return forward.emitError()
             << "cross_entropy needs logits shaped [..., classes], but '"
             << spec.output << "' is " << typeStr(type);
    plan.labelType =
        RankedTensorType::get(type.getShape().drop_back(),
                              IntegerType::get(forward.getContext(), 64));
    break;
  case LossSpec::Mse:
    // The loss is computed in f32 or wider (buildMicroLoss), so a 16-bit
    // output (precision lowering made it so) is compared with an f32 target.
    plan.labelType =
        type.getElementType().getIntOrFloatBitWidth() < 32
            ? RankedTensorType::get(type.getShape(),
                                    Float32Type::get(forward.getContext()))
            : type;
    break;
  }

  // A labels/target name that @forward already takes reuses that input.
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, kNameAttr);
    if (!name || name.getValue() != spec.label)
      continue;
    auto argType =
        llvm::cast<RankedTensorType>(forward.getArgument(i).getType());
    bool fits = spec.kind == LossSpec::Mse
                    ? argType == plan.labelType
                    : argType.getShape() == plan.labelType.getShape() &&
                          argType.getElementType().isSignlessInteger();
    if (!fits)
      return forward.emitError()
             << (spec.kind == LossSpec::Mse ? "mse target '"
                                            : "cross_entropy labels '")
             << spec.label << "' is an existing input of type "
             << typeStr(argType) << ", but '" << spec.output << "' ("
             << typeStr(type) << ") needs "
             << (spec.kind == LossSpec::Mse
                     ? typeStr(plan.labelType)
                     : "integers shaped " + typeStr(plan.labelType));
    plan.labelType = argType;
    plan.labelArg = i;
  }
  return success();
}

static Value toScalar(OpBuilder &b, Location loc, Value v) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getRank() == 0)
    return v;
  return ReshapeOp::create(b, loc,
                           RankedTensorType::get({}, type.getElementType()), v);
}

/// A 16-bit output as f32: the loss is computed in fp32 (cross-entropy reads
/// 16-bit logits itself and returns f32).
static Value atLeastF32(OpBuilder &b, Location loc, Value v) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getElementType().getIntOrFloatBitWidth() >= 32)
    return v;
  return CastOp::create(b, loc,
                        RankedTensorType::get(type.getShape(), b.getF32Type()),
                        v);
}

MicroLoss buildMicroLoss(OpBuilder &b, Location loc, const LossPlan &plan,
                         Value output, Value label) {
  if (plan.spec.kind != LossSpec::CrossEntropy)
    output = atLeastF32(b, loc, output);
  switch (plan.spec.kind) {
  case LossSpec::Output:
    return {toScalar(b, loc, output), nullptr};
  case LossSpec::CrossEntropy: {
    auto ce = CrossEntropyOp::create(
        b, loc, output, label, b.getI64IntegerAttr(plan.spec.ignoreIndex));
    return {ce.getLossSum(), ce.getCount()};
  }
  case LossSpec::Mse: {
    // F.mse_loss(reduction="mean"): mean((out - target)^2), x^2 as x * x as
    // PyTorch computes it.
    Value diff = SubOp::create(b, loc, output, label);
    Value sq = MulOp::create(b, loc, diff, diff);
    auto type = llvm::cast<RankedTensorType>(sq.getType());
    if (type.getRank() == 0)
      return {sq, nullptr};
    SmallVector<int64_t> axes =
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    return {ReduceMeanOp::create(b, loc, sq, b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(false)),
            nullptr};
  }
  }
  llvm_unreachable("unknown loss kind");
}

/// The true elements of the i1 tensor `mask`, as a scalar of `type`.
static Value countTrue(OpBuilder &b, Location loc, Value mask, Type type) {
  auto maskType = llvm::cast<RankedTensorType>(mask.getType());
  Value ones = CastOp::create(
      b, loc, RankedTensorType::get(maskType.getShape(), type), mask);
  if (maskType.getRank() == 0)
    return ones;
  SmallVector<int64_t> axes =
      llvm::to_vector(llvm::seq<int64_t>(0, maskType.getRank()));
  return ReduceSumOp::create(b, loc, ones, b.getDenseI64ArrayAttr(axes),
                             b.getBoolAttr(false));
}

Value buildCorrectCount(OpBuilder &b, Location loc, const LossPlan &plan,
                        Value logits, Value label) {
  auto logitsType = llvm::cast<RankedTensorType>(logits.getType());
  auto labelType = llvm::cast<RankedTensorType>(label.getType());
  int64_t rank = logitsType.getRank(), classes = logitsType.getShape().back();
  Type index = labelType.getElementType();
  auto cmp = [&](CmpPredicate pred, Value lhs, Value rhs) -> Value {
    return CmpOp::create(b, loc, CmpPredicateAttr::get(b.getContext(), pred),
                         lhs, rhs);
  };
  // one_hot[..., c] = (c == label[...]): the class ids against the labels
  // with a trailing unit dim.
  SmallVector<APInt> ids;
  for (int64_t c = 0; c < classes; ++c)
    ids.push_back(APInt(index.getIntOrFloatBitWidth(), uint64_t(c)));
  Value classIds = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({classes}, index), ids));
  SmallVector<int64_t> column = llvm::to_vector(labelType.getShape());
  column.push_back(1);
  Value labelColumn =
      ReshapeOp::create(b, loc, RankedTensorType::get(column, index), label);
  Value oneHot = cmp(CmpPredicate::eq, classIds, labelColumn);
  Value x = atLeastF32(b, loc, logits);
  Type elem = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  auto last = b.getDenseI64ArrayAttr({rank - 1});
  Value picked = ReduceSumOp::create(
      b, loc,
      WhereOp::create(b, loc, oneHot, x, scalarConstant(b, loc, elem, 0.0)),
      last, b.getBoolAttr(false));
  Value best = ReduceMaxOp::create(b, loc, x, last, b.getBoolAttr(false));
  Value counted =
      cmp(CmpPredicate::ne, label,
          scalarConstant(b, loc, index, double(plan.spec.ignoreIndex)));
  Value right =
      AndOp::create(b, loc, cmp(CmpPredicate::ge, picked, best), counted);
  return countTrue(b, loc, right, b.getF32Type());
}

static Value sum(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  Value total = values.front();
  for (Value v : values.drop_front())
    total = AddOp::create(b, loc, total, v);
  return total;
}

Value countLabels(OpBuilder &b, Location loc, const LossPlan &plan,
                  Value labels, Type type) {
  Type index = llvm::cast<RankedTensorType>(labels.getType()).getElementType();
  Value counted = CmpOp::create(
      b, loc, CmpPredicateAttr::get(b.getContext(), CmpPredicate::ne), labels,
      scalarConstant(b, loc, index, double(plan.spec.ignoreIndex)));
  return countTrue(b, loc, counted, type);
}

Value allReduceCount(OpBuilder &b, Location loc, Value count) {
  return exec::AllReduceOp::create(
             b, loc, TypeRange{count.getType()}, ValueRange{count},
             exec::ReductionAttr::get(b.getContext(), exec::Reduction::mean),
             b.getI64IntegerAttr(0), b.getI64IntegerAttr(0),
             b.getI64IntegerAttr(0), UnitAttr())
      .getResult(0);
}

Value combineLosses(OpBuilder &b, Location loc, ArrayRef<MicroLoss> parts,
                    bool allReduce, Value count) {
  SmallVector<Value> nums, dens;
  for (const MicroLoss &p : parts) {
    nums.push_back(p.numerator);
    if (p.denominator)
      dens.push_back(p.denominator);
  }
  Value num = sum(b, loc, nums);
  if (count)
    return DivOp::create(b, loc, num, count);
  if (!dens.empty()) {
    Value den = sum(b, loc, dens);
    if (allReduce)
      den = allReduceCount(b, loc, den);
    return DivOp::create(b, loc, num, den);
  }
  if (parts.size() == 1)
    return num;
  Type elem = llvm::cast<RankedTensorType>(num.getType()).getElementType();
  return DivOp::create(b, loc, num,
                       scalarConstant(b, loc, elem, double(parts.size())));
}

} // namespace tcc::train
