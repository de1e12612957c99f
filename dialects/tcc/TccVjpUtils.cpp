// Helpers shared by the gradient rules.
#include "TccVjpUtils.h"

using namespace mlir;

namespace tcc {

bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && llvm::isa<FloatType>(t.getElementType());
}

Value splatLike(OpBuilder &b, Location loc, Type type, double value) {
  auto t = llvm::cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), value)));
}

Value scalarLike(OpBuilder &b, Location loc, Type type, double value) {
  Type elem = llvm::cast<RankedTensorType>(type).getElementType();
  return splatLike(b, loc, RankedTensorType::get({}, elem), value);
}

Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType from = tensorTypeOf(grad);
  if (from.getShape() == target.getShape())
    return grad;
  int64_t lead = from.getRank() - target.getRank();
  assert(lead >= 0 && "target must broadcast to the gradient's shape");
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < from.getRank(); ++d)
    if (d < lead ||
        (target.getDimSize(d - lead) == 1 && from.getDimSize(d) != 1))
      axes.push_back(d);
  Value sum = grad;
  if (!axes.empty())
    sum = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/false);
  // The reduction dropped the size-1 dims too; put them back.
  if (tensorTypeOf(sum).getShape() != target.getShape())
    sum = ReshapeOp::create(b, loc, target, sum);
  return sum;
}

Value maskToFloat(OpBuilder &b, Location loc, Value mask, Type type) {
  auto shape = tensorTypeOf(mask).getShape();
  Type elem = llvm::cast<RankedTensorType>(type).getElementType();
  return CastOp::create(b, loc, RankedTensorType::get(shape, elem), mask);
}

Value compare(OpBuilder &b, Location loc, CmpPredicate pred, Value lhs,
              Value rhs) {
  return CmpOp::create(b, loc, pred, lhs, rhs);
}

Value restoreReducedDims(OpBuilder &b, Location loc, Value reduced,
                         RankedTensorType input, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> shape(input.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  auto type =
      RankedTensorType::get(shape, tensorTypeOf(reduced).getElementType());
  if (tensorTypeOf(reduced) == type)
    return reduced;
  return ReshapeOp::create(b, loc, type, reduced);
}

} // namespace tcc
