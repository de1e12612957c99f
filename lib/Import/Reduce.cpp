// ReduceSum/Mean/Max/Min, and ReduceSumSquare/L1/L2 as a ReduceSum of the
// squares or magnitudes (L2 then a square root). ReduceSum takes its axes as
// an input from opset 13, the others keep the attribute until opset 18; both
// forms are read for every op so a model mixing them needs no opset
// bookkeeping here. ArgMax/ArgMin compose a reduction, a comparison and a
// reduction of positions.
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

/// What a reduction applies to each element first, and to the result after.
enum class Around { None, SumSquare, L1, L2 };

template <typename OpT, Around A = Around::None>
static LogicalResult convertReduce(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) ||
      failed(n.expectAttrs({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  llvm::SmallVector<int64_t> axes;
  if (n.hasInput(1)) {
    auto a = n.intsInput(1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else if (auto a = n.intsAttr("axes")) {
    axes = *a;
  }
  bool keepdims = n.intAttr("keepdims", 1) != 0;
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  if (type.getElementType().isInteger(1))
    return n.unsupported("reductions of bool tensors are not supported");
  Value x = n.input(0);
  if (A == Around::SumSquare || A == Around::L2) {
    auto sq = n.create<MulOp>(x, x);
    if (failed(sq))
      return failure();
    x = *sq;
  } else if (A == Around::L1) {
    auto abs = n.create<AbsOp>(x);
    if (failed(abs))
      return failure();
    x = *abs;
  }
  auto finish = [&](Value r) -> LogicalResult {
    if (A == Around::L2) {
      auto root = n.create<SqrtOp>(r);
      if (failed(root))
        return failure();
      r = *root;
    }
    return n.setOutput(0, r);
  };
  if (axes.empty()) {
    // No reduction; the elementwise part still applies (ONNX's reference).
    if (n.intAttr("noop_with_empty_axes", 0) != 0)
      return finish(x);
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    auto axis = n.normalizeAxis(a, rank, "axis");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return n.fail("axis " + std::to_string(a) + " is repeated");
    seen[*axis] = true;
    a = *axis;
  }
  llvm::sort(axes);
  auto op = n.create<OpT>(x, axes, keepdims);
  return failed(op) ? failure() : finish(*op);
}

/// ArgMax (Max = true) or ArgMin along one axis of n, on values known at
/// import time or at run time (transformers' sequence classifiers find each
/// row's last token with an ArgMax of `arange * mask`): m = the reduction
/// over the axis, the positions where x equals m (or x is NaN: NaN counts as
/// the extreme, as in numpy and PyTorch), then the least such position, or
/// the greatest with select_last_index. Integer results have no gradient.
template <bool Max> static LogicalResult convertArgExtreme(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) ||
      failed(n.expectAttrs({"axis", "keepdims", "select_last_index"})))
    return failure();
  RankedTensorType type = n.inputType(0);
  if (!type.hasStaticShape())
    return n.unsupported("input 0 has a dynamic shape");
  if (type.getElementType().isInteger(1))
    return n.unsupported("ArgMax/ArgMin of a bool tensor is not supported");
  int64_t rank = type.getRank();
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  const bool keepdims = n.intAttr("keepdims", 1) != 0;
  const bool last = n.intAttr("select_last_index", 0) != 0;
  const int64_t dim = type.getDimSize(*axis);
  if (dim == 0)
    return n.fail("axis " + std::to_string(*axis) + " has no elements");
  const llvm::SmallVector<int64_t> axes{*axis};
  auto reduce = [&](bool max, Value v, bool keep) -> FailureOr<Value> {
    if (max) {
      auto op = n.create<ReduceMaxOp>(v, axes, keep);
      return failed(op) ? FailureOr<Value>(failure()) : Value(*op);
    }
    auto op = n.create<ReduceMinOp>(v, axes, keep);
    return failed(op) ? FailureOr<Value>(failure()) : Value(*op);
  };
  Value x = n.input(0);
  FailureOr<Value> extreme = reduce(Max, x, true);
  if (failed(extreme))
    return failure();
  auto hit = n.create<CmpOp>(CmpPredicate::eq, x, *extreme);
  if (failed(hit))
    return failure();
  if (llvm::isa<FloatType>(type.getElementType())) {
    auto nan = n.create<CmpOp>(CmpPredicate::ne, x, x);
    if (failed(nan))
      return failure();
    hit = n.create<OrOp>(*hit, *nan);
    if (failed(hit))
      return failure();
  }
  Type i64 = IntegerType::get(n.context(), 64);
  llvm::SmallVector<int64_t> iotaShape(size_t(rank), 1);
  iotaShape[size_t(*axis)] = dim;
  llvm::SmallVector<int64_t> positions;
  for (int64_t i = 0; i < dim; ++i)
    positions.push_back(i);
  Value iota = n.constant(DenseElementsAttr::get(
      RankedTensorType::get(iotaShape, i64), llvm::ArrayRef(positions)));
  // Positions that miss become dim (ArgMax's first) or -1 (its last), which
  // the reduction of positions never picks while one position hits.
  int64_t miss = last ? -1 : dim;
  Value missing = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, i64), llvm::APInt(64, uint64_t(miss), true)));
  auto candidates = n.create<WhereOp>(*hit, iota, missing);
  if (failed(candidates))
    return failure();
  FailureOr<Value> picked = reduce(last, *candidates, keepdims);
  return failed(picked) ? failure() : n.setOutput(0, *picked);
}

void registerReduceConverters(ConverterTable &table) {
  table["ArgMax"] = convertArgExtreme<true>;
  table["ArgMin"] = convertArgExtreme<false>;
  table["ReduceSum"] = convertReduce<ReduceSumOp>;
  table["ReduceMean"] = convertReduce<ReduceMeanOp>;
  table["ReduceMax"] = convertReduce<ReduceMaxOp>;
  table["ReduceMin"] = convertReduce<ReduceMinOp>;
  table["ReduceSumSquare"] = convertReduce<ReduceSumOp, Around::SumSquare>;
  table["ReduceL1"] = convertReduce<ReduceSumOp, Around::L1>;
  table["ReduceL2"] = convertReduce<ReduceSumOp, Around::L2>;
}

} // namespace tcc::onnx_import
