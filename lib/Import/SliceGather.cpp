// Indexing ops: Slice (opset 13 inputs form), Gather, which becomes
// tcc.embedding when it looks rows up in a parameter table, and ScatterND
// and ScatterElements with known indices (`x[..., a:b] = y`, `x[:, 0] = v`,
// as exporters write slice assignment), a gather and a select.
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

/// The reduction of a Scatter node, which must be "none" (overwrite).
static LogicalResult expectOverwrite(NodeImporter &n) {
  std::string reduction = "none";
  if (const onnx::AttributeProto *at = n.attr("reduction"))
    reduction = at->s();
  if (reduction == "none")
    return success();
  return n.unsupported("reduction '" + reduction +
                       "' (only 'none', overwriting, is supported)");
}

/// data (input 0) viewed as [rows, slice] with some rows overwritten by
/// rows of updates (input 2) viewed as [updRows, slice]: row p takes
/// updates row src[p] where written[p], else keeps its own. Both maps are
/// constants, so this is where(written, gather(updates, src), data):
/// differentiable in data (the rows kept) and updates (each the gradient
/// of the row it wrote), folded at import when data and updates are
/// constants too.
static LogicalResult scatterRows(NodeImporter &n, int64_t rows, int64_t slice,
                                 int64_t updRows, llvm::ArrayRef<int64_t> src,
                                 llvm::ArrayRef<bool> written) {
  RankedTensorType data = n.inputType(0);
  if (updRows == 0)
    return n.setOutput(0, n.input(0));
  MLIRContext *ctx = n.context();
  auto table = n.reshape(n.input(2), {updRows, slice});
  auto flat = n.reshape(n.input(0), {rows, slice});
  if (failed(table) || failed(flat))
    return failure();
  Value srcIdx = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({rows}, IntegerType::get(ctx, 64)), src));
  auto picked = n.create<GatherOp>(*table, srcIdx, int64_t(0));
  if (failed(picked))
    return failure();
  Value mask = n.constant(DenseElementsAttr::get(
      RankedTensorType::get({rows, 1}, IntegerType::get(ctx, 1)), written));
  auto merged = n.create<WhereOp>(mask, *picked, *flat);
  if (failed(merged))
    return failure();
  auto out = n.reshape(*merged, data.getShape());
  return failed(out) ? failure() : n.setOutput(0, *out);
}

/// The indices (input 1) as known at import time, or the error naming them.
static FailureOr<Lit> constantIndices(NodeImporter &n) {
  DenseElementsAttr idxAttr = n.constantInput(1);
  if (!idxAttr)
    return n.notConstant(1, "indices");
  std::optional<Lit> indices = toLit(idxAttr);
  if (!indices)
    return n.unsupported("indices are too large to evaluate at import time");
  if (!n.inputType(0).hasStaticShape() || !n.inputType(2).hasStaticShape())
    return n.unsupported("an input has a dynamic shape");
  return std::move(*indices);
}

/// ScatterND(data, indices, updates), reduction "none", with indices known
/// at import time (`x[:, a:b] = y` as exporters write slice assignment):
/// each index row (i_0, ..., i_{k-1}) overwrites the slice data[i_0, ...,
/// i_{k-1}, ...] with its row of updates (the last row wins where rows
/// repeat); data's first k dims merged are scatterRows' rows.
static LogicalResult convertScatterND(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(n.expectAttrs({"reduction"})) ||
      failed(expectOverwrite(n)))
    return failure();
  FailureOr<Lit> indices = constantIndices(n);
  if (failed(indices))
    return failure();
  RankedTensorType data = n.inputType(0), upd = n.inputType(2);
  int64_t r = data.getRank(), q = indices->type.getRank();
  int64_t k = q ? indices->shape()[q - 1] : 0;
  if (q < 1 || k < 1 || k > r)
    return n.fail("index rows of length " + std::to_string(k) +
                  " do not fit data rank " + std::to_string(r));
  llvm::SmallVector<int64_t> updShape(indices->shape().drop_back());
  for (int64_t d = k; d < r; ++d)
    updShape.push_back(data.getDimSize(d));
  if (llvm::ArrayRef<int64_t>(updShape) != upd.getShape())
    return n.fail("updates have the wrong shape for these indices and data");
  int64_t rows = 1, slice = 1;
  for (int64_t d = 0; d < k; ++d)
    rows *= data.getDimSize(d);
  for (int64_t d = k; d < r; ++d)
    slice *= data.getDimSize(d);
  int64_t updRows = indices->numElements() / k, bad = -1;
  std::vector<int64_t> target =
      indexRowsFlat(*indices, data.getShape().take_front(k), bad);
  if (bad >= 0)
    return n.fail("index row " + std::to_string(bad) + " is out of range");
  llvm::SmallVector<int64_t> src(size_t(rows), 0);
  llvm::SmallVector<bool> written(size_t(rows), false);
  for (int64_t row = 0; row < updRows; ++row) {
    src[size_t(target[size_t(row)])] = row;
    written[size_t(target[size_t(row)])] = true;
  }
  return scatterRows(n, rows, slice, updRows, src, written);
}

/// ScatterElements(data, indices, updates, axis), reduction "none", with
/// indices known at import time (`x[:, 0] = v` as the dynamo exporter
/// writes select_scatter): element i of updates overwrites data at i with
/// i[axis] = indices[i]; scatterRows with one-element rows.
static LogicalResult convertScatterElements(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) ||
      failed(n.expectAttrs({"axis", "reduction"})) ||
      failed(expectOverwrite(n)))
    return failure();
  FailureOr<Lit> indices = constantIndices(n);
  if (failed(indices))
    return failure();
  RankedTensorType data = n.inputType(0), upd = n.inputType(2);
  int64_t rank = data.getRank();
  if (indices->type.getRank() != rank || upd.getShape() != indices->shape())
    return n.fail("indices and updates must have data's rank and one shape");
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (indices->shape()[d] > data.getDimSize(d) && d != *axis)
      return n.fail("indices dim " + std::to_string(d) + " is past data's");
  int64_t total = data.getNumElements(), count = indices->numElements();
  int64_t bad = -1;
  std::vector<int64_t> target =
      elementTargetsFlat(*indices, data.getShape(), *axis, bad);
  if (bad >= 0)
    return n.fail("index " + std::to_string(indices->i(bad)) +
                  " is out of range for dim " +
                  std::to_string(data.getDimSize(*axis)));
  llvm::SmallVector<int64_t> src(size_t(total), 0);
  llvm::SmallVector<bool> written(size_t(total), false);
  for (int64_t e = 0; e < count; ++e) {
    src[size_t(target[size_t(e)])] = e;
    written[size_t(target[size_t(e)])] = true;
  }
  return scatterRows(n, total, 1, count, src, written);
}

void registerSliceGatherConverters(ConverterTable &table) {
  table["ScatterElements"] = convertScatterElements;
  table["ScatterND"] = convertScatterND;
  table["Slice"] = convertSlice;
  table["Gather"] = convertGather;
}

} // namespace tcc::onnx_import
