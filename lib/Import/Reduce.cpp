// ReduceSum/Mean/Max/Min, and ReduceSumSquare/L1/L2 as a ReduceSum of the
// squares or magnitudes (L2 then a square root). ReduceSum takes its axes as
// an input from opset 13, the others keep the attribute until opset 18; both
// forms are read for every op so a model mixing them needs no opset
// bookkeeping here.
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

void registerReduceConverters(ConverterTable &table) {
  table["ReduceSum"] = convertReduce<ReduceSumOp>;
  table["ReduceMean"] = convertReduce<ReduceMeanOp>;
  table["ReduceMax"] = convertReduce<ReduceMaxOp>;
  table["ReduceMin"] = convertReduce<ReduceMinOp>;
  table["ReduceSumSquare"] = convertReduce<ReduceSumOp, Around::SumSquare>;
  table["ReduceL1"] = convertReduce<ReduceSumOp, Around::L1>;
  table["ReduceL2"] = convertReduce<ReduceSumOp, Around::L2>;
}

} // namespace tcc::onnx_import
