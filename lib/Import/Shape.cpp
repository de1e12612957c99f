// Shape ops: Reshape, Flatten, Squeeze, Unsqueeze, Expand, Transpose, Concat,
// Split. Their shape operands must be known at import time (tcc has static
// shapes); a known data operand is moved around by the interpreter's fold of
// the emitted op (FoldNode.cpp).
#include "Importer.h"

#include "tcc/TccShapes.h"

using namespace mlir;

namespace tcc::onnx_import {

/// Sets output 0 to input 0 reshaped to `shape` (element count checked).
static LogicalResult setReshaped(NodeImporter &n,
                                 llvm::ArrayRef<int64_t> shape) {
  auto r = n.reshape(n.input(0), shape);
  return failed(r) ? failure() : n.setOutput(0, *r);
}

static LogicalResult convertReshape(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({"allowzero"})))
    return failure();
  auto target = n.intsInput(1, "target shape");
  if (failed(target))
    return failure();
  bool allowZero = n.intAttr("allowzero", 0) != 0;
  llvm::ArrayRef<int64_t> in = n.inputShape(0);
  llvm::SmallVector<int64_t> shape;
  int inferred = -1;
  int64_t known = 1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return n.fail("target shape " + shapeStr(*target) + " copies dim " +
                      std::to_string(i) + " of a rank-" +
                      std::to_string(in.size()) + " input");
      d = in[i];
    } else if (d == -1) {
      if (inferred >= 0)
        return n.fail("target shape " + shapeStr(*target) +
                      " has more than one -1");
      inferred = int(i);
      shape.push_back(1);
      continue;
    } else if (d < 0) {
      return n.fail("target shape " + shapeStr(*target) +
                    " has a negative dimension");
    }
    shape.push_back(d);
    known *= d;
  }
  int64_t total = numElements(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return n.fail("cannot reshape " + shapeStr(in) + " to " +
                    shapeStr(*target));
    shape[inferred] = total / known;
  }
  if (numElements(shape) != total)
    return n.fail("cannot reshape " + shapeStr(in) + " to " +
                  shapeStr(*target));
  return setReshaped(n, shape);
}

static LogicalResult convertFlatten(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"axis"})))
    return failure();
  llvm::ArrayRef<int64_t> in = n.inputShape(0);
  int64_t rank = in.size(), axis = n.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return n.fail("axis " + std::to_string(n.intAttr("axis", 1)) +
                  " is out of range for rank " + std::to_string(rank));
  return setReshaped(
      n, {numElements(in.take_front(axis)), numElements(in.drop_front(axis))});
}

/// Axes from input 1 (opset 13) or the `axes` attribute (older opsets).
static FailureOr<std::optional<llvm::SmallVector<int64_t>>>
axesOf(NodeImporter &n) {
  if (n.hasInput(1)) {
    auto axes = n.intsInput(1, "axes");
    if (failed(axes))
      return failure();
    return std::optional(*axes);
  }
  return n.intsAttr("axes");
}

/// Normalises `axes` against `rank`, rejecting duplicates.
static FailureOr<llvm::SmallVector<bool>>
axisMask(NodeImporter &n, llvm::ArrayRef<int64_t> axes, int64_t rank) {
  llvm::SmallVector<bool> mask(rank, false);
  for (int64_t a : axes) {
    auto axis = n.normalizeAxis(a, rank, "axis");
    if (failed(axis))
      return failure();
    if (mask[*axis])
      return n.fail("axis " + std::to_string(a) + " is repeated");
    mask[*axis] = true;
  }
  return mask;
}

static LogicalResult convertSqueeze(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) || failed(n.expectAttrs({"axes"})))
    return failure();
  auto axes = axesOf(n);
  if (failed(axes))
    return failure();
  llvm::ArrayRef<int64_t> in = n.inputShape(0);
  llvm::SmallVector<bool> mask(in.size(), false);
  if (*axes) {
    auto m = axisMask(n, **axes, in.size());
    if (failed(m))
      return failure();
    mask = *m;
  } else {
    for (size_t d = 0; d < in.size(); ++d)
      mask[d] = in[d] == 1;
  }
  llvm::SmallVector<int64_t> shape;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!mask[d])
      shape.push_back(in[d]);
    else if (in[d] != 1)
      return n.fail("cannot squeeze dim " + std::to_string(d) + " of size " +
                    std::to_string(in[d]));
  }
  return setReshaped(n, shape);
}

static LogicalResult convertUnsqueeze(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) || failed(n.expectAttrs({"axes"})))
    return failure();
  auto axes = axesOf(n);
  if (failed(axes))
    return failure();
  if (!*axes)
    return n.fail("axes are required");
  llvm::ArrayRef<int64_t> in = n.inputShape(0);
  int64_t rank = in.size() + (*axes)->size();
  auto mask = axisMask(n, **axes, rank);
  if (failed(mask))
    return failure();
  llvm::SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back((*mask)[d] ? 1 : in[next++]);
  return setReshaped(n, shape);
}

static LogicalResult convertExpand(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({})))
    return failure();
  auto target = n.intsInput(1, "shape");
  if (failed(target))
    return failure();
  // ONNX Expand broadcasts both ways: a 1 in `shape` keeps the input's dim.
  auto shape = broadcastShapes(n.inputShape(0), *target);
  if (!shape)
    return n.fail("cannot expand " + shapeStr(n.inputShape(0)) + " to " +
                  shapeStr(*target));
  auto r = n.broadcast(n.input(0), *shape);
  return failed(r) ? failure() : n.setOutput(0, *r);
}

static LogicalResult convertTranspose(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"perm"})))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  llvm::SmallVector<int64_t> perm;
  if (auto p = n.intsAttr("perm"))
    perm = *p;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  llvm::SmallVector<bool> seen(rank, false);
  bool valid = int64_t(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return n.fail("perm " + shapeStr(perm) + " is not a permutation of rank " +
                  std::to_string(rank));
  auto op = n.create<TransposeOp>(n.input(0), perm);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

static LogicalResult convertConcat(NodeImporter &n) {
  if (failed(n.expectInputs(1, n.numInputs())) ||
      failed(n.expectAttrs({"axis"})))
    return failure();
  if (!n.attr("axis"))
    return n.fail("attribute 'axis' is required");
  RankedTensorType first = n.inputType(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), first.getRank(), "axis");
  if (failed(axis))
    return failure();
  llvm::SmallVector<int> parts;
  for (int i = 0; i < n.numInputs(); ++i) {
    RankedTensorType t = n.inputType(i);
    bool same = t.getRank() == first.getRank() &&
                t.getElementType() == first.getElementType();
    for (int64_t d = 0; same && d < t.getRank(); ++d)
      same = d == *axis || t.getDimSize(d) == first.getDimSize(d);
    if (!same)
      return n.fail("input " + std::to_string(i) + " " +
                    shapeStr(t.getShape()) + " does not match input 0 " +
                    shapeStr(first.getShape()) + " off axis " +
                    std::to_string(*axis));
    if (t.getDimSize(*axis) == 0)
      continue; // empty pieces contribute nothing
    parts.push_back(i);
  }
  if (parts.empty())
    return n.setConstant(
        0, DenseElementsAttr::get(first, llvm::ArrayRef<Attribute>{}));
  if (parts.size() == 1)
    return n.setOutput(0, n.input(parts[0]));
  llvm::SmallVector<Value> values;
  for (int i : parts)
    values.push_back(n.input(i));
  auto op = n.create<ConcatOp>(values, *axis);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

static LogicalResult convertSplit(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) ||
      failed(n.expectAttrs({"axis", "split", "num_outputs"})))
    return failure();
  RankedTensorType type = n.inputType(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis), pieces = n.numOutputs();
  llvm::SmallVector<int64_t> sizes;
  if (n.hasInput(1)) {
    auto s = n.intsInput(1, "split sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = n.intsAttr("split")) {
    sizes = *s;
  } else {
    // Equal pieces; opset 18's num_outputs allows a smaller last piece.
    int64_t size = (dim + pieces - 1) / std::max<int64_t>(pieces, 1);
    if (!n.attr("num_outputs") && dim % std::max<int64_t>(pieces, 1) != 0)
      return n.fail("dim " + std::to_string(dim) + " does not split into " +
                    std::to_string(pieces) + " equal pieces");
    for (int64_t i = 0, left = dim; i < pieces; ++i, left -= size)
      sizes.push_back(std::min(size, left));
  }
  int64_t total = 0;
  bool negative = false;
  for (int64_t s : sizes) {
    negative |= s < 0;
    total += s;
  }
  if (negative || int64_t(sizes.size()) != pieces || total != dim)
    return n.fail("split sizes " + shapeStr(sizes) + " do not cover dim " +
                  std::to_string(dim) + " with " + std::to_string(pieces) +
                  " outputs");
  auto op = n.create<SplitOp>(n.input(0), *axis, sizes);
  if (failed(op))
    return failure();
  for (int64_t i = 0; i < pieces; ++i)
    if (failed(n.setOutput(i, op->getResult(i))))
      return failure();
  return success();
}

void registerShapeConverters(ConverterTable &table) {
  table["Reshape"] = convertReshape;
  table["Flatten"] = convertFlatten;
  table["Squeeze"] = convertSqueeze;
  table["Unsqueeze"] = convertUnsqueeze;
  table["Expand"] = convertExpand;
  table["Transpose"] = convertTranspose;
  table["Concat"] = convertConcat;
  table["Split"] = convertSplit;
}

} // namespace tcc::onnx_import
