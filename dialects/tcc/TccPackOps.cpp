// Type inference of the pad-skipping ops (TccPackOps.td).
#include "tcc/TccOps.h"

using namespace mlir;
using namespace tcc;

LogicalResult PackIndexOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto mask = tensorTypeOf(adaptor.getKeyMask());
  Type e = mask.getElementType();
  if (mask.getRank() != 2 || !(e.isInteger(1) || llvm::isa<FloatType>(e)))
    return emitOptionalError(loc, "key_mask must be [batch, seq] of i1 or float");
  auto i32 = IntegerType::get(ctx, 32);
  inferred.push_back(RankedTensorType::get({mask.getNumElements()}, i32));
  inferred.push_back(RankedTensorType::get({mask.getDimSize(0) + 1}, i32));
  return success();
}

LogicalResult SegmentIndexOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  auto pos = tensorTypeOf(adaptor.getPositionIds());
  if (pos.getRank() != 2 || !llvm::isa<IntegerType>(pos.getElementType()))
    return emitOptionalError(loc, "position_ids must be [batch, seq] of integers");
  inferred.push_back(
      RankedTensorType::get({pos.getNumElements() + 1}, IntegerType::get(ctx, 32)));
  return success();
}

/// `input`'s leading dims whose product is the row count of `rows`, or an
/// error: [B, T, ...] and [B*T, ...] are both packed rows.
static LogicalResult checkRows(std::optional<Location> loc, Value input, Value rows) {
  auto in = tensorTypeOf(input);
  auto r = tensorTypeOf(rows);
  if (r.getRank() != 1)
    return emitOptionalError(loc, "rows must be 1-D");
  int64_t product = 1;
  for (int64_t d : in.getShape()) {
    if (product == r.getDimSize(0))
      return success();
    product *= d;
  }
  if (product == r.getDimSize(0))
    return success();
  return emitOptionalError(loc, "no leading dims of ", in, " hold ", r.getDimSize(0),
                           " rows");
}

/// pack and unpack: the input's type, once its rows are checked.
static LogicalResult inputTypeOverRows(std::optional<Location> loc, Value input,
                                       Value rows, SmallVectorImpl<Type> &inferred) {
  if (failed(checkRows(loc, input, rows)))
    return failure();
  inferred.push_back(input.getType());
  return success();
}

LogicalResult PackOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inputTypeOverRows(loc, adaptor.getInput(), adaptor.getRows(), inferred);
}

LogicalResult UnpackOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inputTypeOverRows(loc, adaptor.getInput(), adaptor.getRows(), inferred);
}
