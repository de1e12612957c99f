// ReduceSum/Mean/Max/Min. ReduceSum takes its axes as an input from opset
// 13, the others keep the attribute until opset 18; both forms are read for
// every op so a model mixing them needs no opset bookkeeping here.
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

template <typename OpT> static LogicalResult convertReduce(NodeImporter &n) {
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
  if (axes.empty()) {
    if (n.intAttr("noop_with_empty_axes", 0) != 0)
      return n.setOutput(0, n.input(0));
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
  if (type.getElementType().isInteger(1))
    return n.unsupported("reductions of bool tensors are not supported");
  auto op = n.create<OpT>(n.input(0), axes, keepdims);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

void registerReduceConverters(ConverterTable &table) {
  table["ReduceSum"] = convertReduce<ReduceSumOp>;
  table["ReduceMean"] = convertReduce<ReduceMeanOp>;
  table["ReduceMax"] = convertReduce<ReduceMaxOp>;
  table["ReduceMin"] = convertReduce<ReduceMinOp>;
}

} // namespace tcc::onnx_import
