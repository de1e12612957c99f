// Gradient rules of the data-movement ops and reductions: each moves the
// result gradient back to where its elements came from.
#include "tcc/TccVjpUtils.h"

using namespace mlir;
using namespace tcc;

LogicalResult BroadcastOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      sumToShape(b, getLoc(), resultGrads[0], tensorTypeOf(getInput())));
  return success();
}

LogicalResult ReshapeOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

LogicalResult TransposeOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(
      TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SliceGradOp::create(b, getLoc(), getInput().getType(),
                                             resultGrads[0], getStarts(),
                                             getLimits(), getStrides()));
  return success();
}

LogicalResult ConcatOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  RankedTensorType out = tensorTypeOf(g);
  int64_t axis = getAxis();
  SmallVector<int64_t> starts(out.getRank(), 0), limits(out.getShape()),
      strides(out.getRank(), 1);
  for (Value input : getInputs()) {
    int64_t size = tensorTypeOf(input).getDimSize(axis);
    limits[axis] = starts[axis] + size;
    operandGrads.push_back(
        SliceOp::create(b, getLoc(), g, starts, limits, strides));
    starts[axis] = limits[axis];
  }
  return success();
}

LogicalResult SplitOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  // Pieces nobody used contribute zeros.
  SmallVector<Value> pieces;
  for (auto [result, g] : llvm::zip(getResults(), resultGrads))
    pieces.push_back(g ? g : zerosLike(b, getLoc(), result.getType()));
  operandGrads.push_back(ConcatOp::create(b, getLoc(), pieces, getAxis()));
  return success();
}

LogicalResult GatherOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GatherGradOp::create(b, getLoc(), getData().getType(),
                                              getIndices(), resultGrads[0],
                                              getAxis()));
  operandGrads.push_back(Value()); // indices
  return success();
}

LogicalResult EmbeddingOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GatherGradOp::create(
      b, getLoc(), getTable().getType(), getIds(), resultGrads[0], /*axis=*/0));
  operandGrads.push_back(Value()); // ids
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The result gradient with the reduced dims restored as size 1.
static Value keptGrad(OpBuilder &b, Location loc, Value g, Value input,
                      ArrayRef<int64_t> axes) {
  return restoreReducedDims(b, loc, g, tensorTypeOf(input), axes);
}

LogicalResult ReduceSumOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = keptGrad(b, getLoc(), resultGrads[0], getInput(), getAxes());
  operandGrads.push_back(
      BroadcastOp::create(b, getLoc(), getInput().getType(), g));
  return success();
}

LogicalResult ReduceMeanOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType in = tensorTypeOf(getInput());
  if (!isFloatTensor(getInput())) {
    operandGrads.push_back(Value());
    return success();
  }
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= in.getDimSize(a);
  Location loc = getLoc();
  Value g = keptGrad(b, loc, resultGrads[0], getInput(), getAxes());
  // Scale before broadcasting: fewer elements. An empty mean's gradient is
  // 0 * inf = NaN, as in PyTorch.
  g = MulOp::create(b, loc, g,
                    scalarLike(b, loc, in, 1.0 / static_cast<double>(count)));
  operandGrads.push_back(BroadcastOp::create(b, loc, in, g));
  return success();
}

/// reduce_max / reduce_min: the gradient is split evenly among the elements
/// equal to the extremum, as torch.amax / torch.amin do (torch.max(dim)
/// instead picks one index; ONNX ReduceMax has no index to pick).
static LogicalResult extremumVjp(OpBuilder &b, Operation *op, Value g,
                                 ArrayRef<int64_t> axes,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value x = op->getOperand(0), y = op->getResult(0);
  if (!isFloatTensor(x)) {
    operandGrads.push_back(Value());
    return success();
  }
  Location loc = op->getLoc();
  Value yKept = keptGrad(b, loc, y, x, axes);
  Value gKept = keptGrad(b, loc, g, x, axes);
  Value hits = maskToFloat(b, loc, compare(b, loc, CmpPredicate::eq, x, yKept),
                           x.getType());
  Value count = ReduceSumOp::create(b, loc, hits, axes, /*keepdims=*/true);
  Value share = DivOp::create(b, loc, gKept, count);
  operandGrads.push_back(MulOp::create(b, loc, share, hits));
  return success();
}

LogicalResult ReduceMaxOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return extremumVjp(b, *this, resultGrads[0], getAxes(), operandGrads);
}

LogicalResult ReduceMinOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return extremumVjp(b, *this, resultGrads[0], getAxes(), operandGrads);
}
