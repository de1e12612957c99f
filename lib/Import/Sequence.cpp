// ONNX sequences, as far as exporters use them: torch.onnx.export's
// dynamo-based exporter without its optimizer writes torch.split/chunk as
// SplitToSequence followed by one SequenceAt per piece. A sequence lives
// only at import time, as the list of its elements; every element is an
// ordinary tcc value, so nothing after the importer knows sequences.
#include "ConstFold.h"
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

bool takesSequences(llvm::StringRef opType) {
  return opType == "SequenceAt" || opType == "SequenceLength";
}

namespace {

/// SplitToSequence(input, split?): pieces of `split` (a scalar: pieces of
/// that size, the last one smaller; a 1-D list: those sizes) along `axis`;
/// without `split`, pieces of size 1, with the axis dropped unless keepdims.
LogicalResult convertSplitToSequence(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) ||
      failed(n.expectAttrs({"axis", "keepdims"})))
    return failure();
  RankedTensorType type = n.inputType(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  llvm::SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (n.hasInput(1)) {
    auto s = n.intsInput(1, "split");
    if (failed(s))
      return failure();
    if (n.inputType(1).getRank() == 0) {
      int64_t size = (*s)[0];
      if (size <= 0)
        return n.fail("split size " + std::to_string(size) +
                      " is not positive");
      for (int64_t left = dim; left > 0; left -= size)
        sizes.push_back(std::min(size, left));
    } else {
      sizes = *s;
    }
  } else {
    sizes.assign(dim, 1);
    squeeze = n.intAttr("keepdims", 1) == 0;
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return n.fail("split sizes " + shapeStr(sizes) + " have a negative size");
    total += s;
  }
  if (total != dim)
    return n.fail("split sizes " + shapeStr(sizes) + " do not cover dim " +
                  std::to_string(dim));
  std::vector<ValueInfo> elements;
  if (sizes.empty()) {
    n.setSequence(0, {});
    return success();
  }
  auto split = n.create<SplitOp>(n.input(0), *axis, sizes);
  if (failed(split))
    return failure();
  for (Value piece : split->getResults()) {
    if (squeeze) {
      llvm::SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + *axis);
      auto r = n.reshape(piece, shape);
      if (failed(r))
        return failure();
      piece = *r;
    }
    elements.push_back(ValueInfo{piece, nullptr});
  }
  n.setSequence(0, std::move(elements));
  return success();
}

/// SequenceAt(sequence, position): the element at a known position
/// (negative counts from the end).
LogicalResult convertSequenceAt(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({})))
    return failure();
  auto seq = n.sequenceInput(0);
  if (failed(seq))
    return failure();
  auto position = n.intsInput(1, "position");
  if (failed(position))
    return failure();
  int64_t size = int64_t((*seq)->size()), i = (*position)[0];
  if (position->size() != 1 || i < -size || i >= size)
    return n.fail("position " + shapeStr(*position) +
                  " is outside the sequence of " + std::to_string(size) +
                  " elements");
  return n.setValueInfo(0, (**seq)[i < 0 ? i + size : i]);
}

LogicalResult convertSequenceLength(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({})))
    return failure();
  auto seq = n.sequenceInput(0);
  if (failed(seq))
    return failure();
  auto type = RankedTensorType::get({}, IntegerType::get(n.context(), 64));
  return n.setConstant(
      0, DenseElementsAttr::get(type, int64_t((*seq)->size())));
}

} // namespace

void registerSequenceConverters(ConverterTable &table) {
  table["SplitToSequence"] = convertSplitToSequence;
  table["SequenceAt"] = convertSequenceAt;
  table["SequenceLength"] = convertSequenceLength;
}

} // namespace tcc::onnx_import
