// Indexing ops: Slice (opset 13 inputs form) and Gather, which becomes
// tcc.embedding when it looks rows up in a parameter table.
#include "ConstFold.h"
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

/// ONNX's clamping rules, producing the in-range form tcc.slice requires:
/// starts/ends count from the end when negative and are clamped to the dim
/// ([-1, dim-1] for a negative step), an empty range collapses to start.
static void clampSliceDim(int64_t dim, int64_t &start, int64_t &limit,
                          int64_t &step) {
  if (dim == 0) {
    start = limit = 0;
    step = 1;
    return;
  }
  if (start < 0)
    start += dim;
  if (limit < 0)
    limit += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    limit = std::clamp<int64_t>(limit, 0, dim);
    limit = std::max(limit, start);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    limit = std::clamp<int64_t>(limit, -1, dim - 1);
    limit = std::min(limit, start);
  }
}

static LogicalResult convertSlice(NodeImporter &n) {
  if (failed(n.expectInputs(3, 5)) || failed(n.expectAttrs({})))
    return failure();
  auto starts = n.intsInput(1, "starts");
  if (failed(starts))
    return failure();
  auto ends = n.intsInput(2, "ends");
  if (failed(ends))
    return failure();
  size_t count = starts->size();
  llvm::SmallVector<int64_t> axes, steps(count, 1);
  for (size_t k = 0; k < count; ++k)
    axes.push_back(int64_t(k));
  if (n.hasInput(3)) {
    auto a = n.intsInput(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  if (n.hasInput(4)) {
    auto s = n.intsInput(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != count || axes.size() != count || steps.size() != count)
    return n.fail("starts, ends, axes and steps differ in length");

  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  llvm::SmallVector<int64_t> lo(rank, 0), hi(type.getShape()), stride(rank, 1);
  llvm::SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < count; ++k) {
    auto axis = n.normalizeAxis(axes[k], rank, "axis");
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return n.fail("axis " + std::to_string(axes[k]) + " is repeated");
    seen[*axis] = true;
    if (steps[k] == 0)
      return n.fail("step is zero");
    lo[*axis] = (*starts)[k];
    hi[*axis] = (*ends)[k];
    stride[*axis] = steps[k];
    clampSliceDim(type.getDimSize(*axis), lo[*axis], hi[*axis], stride[*axis]);
  }
  auto op = n.create<SliceOp>(n.input(0), lo, hi, stride);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

static LogicalResult convertGather(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({"axis"})))
    return failure();
  RankedTensorType data = n.inputType(0);
  if (data.getRank() == 0)
    return n.fail("cannot gather from a scalar");
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), data.getRank(), "axis");
  if (failed(axis))
    return failure();
  if (!llvm::isa<IntegerType>(n.inputElementType(1)) ||
      n.inputElementType(1).isInteger(1))
    return n.fail("indices must be int32 or int64");

  int64_t dim = data.getDimSize(*axis);
  DenseElementsAttr indices = n.constantInput(1);
  if (indices) {
    // Known indices are checked here and made non-negative, so every
    // consumer (embedding included) sees plain row numbers.
    auto lit = toLit(indices);
    if (lit) {
      for (int64_t &i : lit->ints) {
        if (i < -dim || i >= dim)
          return n.fail("index " + std::to_string(i) +
                        " is out of range for dim " + std::to_string(dim));
        if (i < 0)
          i += dim;
      }
      indices = fromLit(*lit);
    }
  }
  Value table = n.input(0);
  Value ids = indices ? n.constant(indices) : n.input(1);
  bool embedding = *axis == 0 && data.getRank() == 2 &&
                   llvm::isa<FloatType>(data.getElementType()) &&
                   table.getDefiningOp<GetParamOp>();
  if (embedding) {
    auto op = n.create<EmbeddingOp>(table, ids);
    return failed(op) ? failure() : n.setOutput(0, *op);
  }
  auto op = n.create<GatherOp>(table, ids, *axis);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

void registerSliceGatherConverters(ConverterTable &table) {
  table["Slice"] = convertSlice;
  table["Gather"] = convertGather;
}

} // namespace tcc::onnx_import
