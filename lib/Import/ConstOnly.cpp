// Ops tcc evaluates at import time only, on constants: the index and mask
// arithmetic of today's exports (transformers' mask construction writes
// CumSum and GatherND over aranges; token_type_ids are a GatherElements of a
// buffer; torch.var's element count is a ReduceProd of a shape). Every input
// must be known when the model is imported; otherwise the op is unsupported,
// naming the input computed at run time. CumSum (position ids counted from an
// attention mask), GatherElements (a buffer read at those positions) and
// GatherND without batch dims (rows picked by run-time indices) also run on
// values known at run time, composed of tcc ops.
#include "ConstFold.h"
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// Every input's literal, or the unsupported error naming the first input
/// only known at run time.
FailureOr<llvm::SmallVector<Lit>> constantInputs(NodeImporter &n) {
  llvm::SmallVector<Lit> lits;
  for (int i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i)) {
      lits.emplace_back();
      continue;
    }
    DenseElementsAttr c = n.constantInput(i);
    if (!c)
      return n.unsupported("input " + std::to_string(i) +
                           " is computed at run time; tcc evaluates this op "
                           "on import-time constants only");
    std::optional<Lit> lit = toLit(c);
    if (!lit)
      return n.unsupported("input " + std::to_string(i) +
                           " is too large to evaluate at import time");
    lits.push_back(std::move(*lit));
  }
  return lits;
}

/// The longest axis a run-time CumSum sums along: it is composed of an
/// n x n triangle per line (below).
constexpr int64_t kMaxRuntimeCumSum = 4096;

/// CumSum of an x known only at run time, along a constant axis of n:
/// y[..., i, ...] = sum over k of x[..., k, ...] * T[k, i], T the n x n
/// triangle of 0 and 1 saying which k count for i (k <= i; k < i when
/// exclusive; reversed, k >= i or k > i): x with a unit axis after its
/// axis, times T, summed over the axis. Integers stay integers (exact);
/// floats differentiate through the product and the sum, and the sum is
/// an fp32 reduce_sum under --precision bf16/fp16 (as autocast's fp32
/// cumsum). One fused reduction in the generated code.
LogicalResult runtimeCumSum(NodeImporter &n) {
  auto axisInput = n.intsInput(1, "axis");
  if (failed(axisInput))
    return failure();
  if (axisInput->size() != 1)
    return n.fail("axis must hold one value");
  RankedTensorType type = n.inputType(0);
  if (!type.hasStaticShape())
    return n.unsupported("input 0 has a dynamic shape");
  int64_t rank = type.getRank();
  auto axis = n.normalizeAxis((*axisInput)[0], rank, "axis");
  if (failed(axis))
    return failure();
  const int64_t len = type.getDimSize(*axis);
  if (len > kMaxRuntimeCumSum)
    return n.unsupported("a CumSum computed at run time along an axis of " +
                         std::to_string(len) + " elements (at most " +
                         std::to_string(kMaxRuntimeCumSum) + ")");
  const bool exclusive = n.intAttr("exclusive", 0) != 0;
  const bool reverse = n.intAttr("reverse", 0) != 0;
  Type elem = type.getElementType();
  // x as [..., n, 1, ...] against T as [n, n] placed at (axis, axis + 1).
  llvm::SmallVector<int64_t> column(type.getShape()), triangle(rank + 1, 1);
  column.insert(column.begin() + *axis + 1, 1);
  triangle[*axis] = len;
  triangle[*axis + 1] = len;
  auto x = n.reshape(n.input(0), column);
  if (failed(x))
    return failure();
  llvm::SmallVector<Attribute> ones;
  ones.reserve(size_t(len * len));
  for (int64_t k = 0; k < len; ++k)
    for (int64_t i = 0; i < len; ++i) {
      bool counts =
          reverse ? (exclusive ? k > i : k >= i) : (exclusive ? k < i : k <= i);
      ones.push_back(isa<FloatType>(elem)
                         ? Attribute(FloatAttr::get(elem, counts ? 1.0 : 0.0))
                         : Attribute(IntegerAttr::get(elem, counts ? 1 : 0)));
    }
  Value t = n.constant(
      DenseElementsAttr::get(RankedTensorType::get(triangle, elem), ones));
  auto terms = n.create<MulOp>(*x, t);
  if (failed(terms))
    return failure();
  auto sums =
      n.create<ReduceSumOp>(*terms, llvm::ArrayRef<int64_t>{*axis}, false);
  if (failed(sums))
    return failure();
  return n.setOutput(0, *sums);
}

/// CumSum(x, axis): running sums along one axis; exclusive leaves out the
/// element itself, reverse runs from the end.
LogicalResult convertCumSum(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) ||
      failed(n.expectAttrs({"exclusive", "reverse"})))
    return failure();
  if (!n.constantInput(0))
    return runtimeCumSum(n);
  auto lits = constantInputs(n);
  if (failed(lits))
    return failure();
  const Lit &x = (*lits)[0];
  if ((*lits)[1].numElements() != 1)
    return n.fail("axis must hold one value");
  auto axis = n.normalizeAxis((*lits)[1].i(0), x.type.getRank(), "axis");
  if (failed(axis))
    return failure();
  bool exclusive = n.intAttr("exclusive", 0), reverse = n.intAttr("reverse", 0);
  std::vector<int64_t> strides = stridesOf(x.shape());
  int64_t len = x.shape()[*axis], stride = strides[*axis];
  Lit out;
  out.type = x.type;
  int64_t count = x.numElements();
  if (x.isFloat())
    out.floats.assign(count, 0.0);
  else
    out.ints.assign(count, 0);
  for (int64_t base = 0; base < count; ++base) {
    if ((base / stride) % len != 0)
      continue; // not the first element of a line along the axis
    double fsum = 0;
    int64_t isum = 0;
    for (int64_t k = 0; k < len; ++k) {
      int64_t at = base + (reverse ? len - 1 - k : k) * stride;
      if (exclusive) {
        x.isFloat() ? out.floats[at] = fsum : out.ints[at] = isum;
      }
      if (x.isFloat())
        fsum += x.f(at);
      else
        isum += x.i(at);
      if (!exclusive) {
        x.isFloat() ? out.floats[at] = fsum : out.ints[at] = isum;
      }
    }
  }
  return n.setConstant(0, fromLit(out));
}

/// ReduceProd(data, axes?): the product over `axes` (opset 18's input, or
/// the older attribute; none: every axis, or the identity with
/// noop_with_empty_axes). The dynamo exporter writes it for the element
/// count of torch.var / torch.std, over a tensor's shape.
LogicalResult convertReduceProd(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)) ||
      failed(n.expectAttrs({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  auto lits = constantInputs(n);
  if (failed(lits))
    return failure();
  const Lit &x = (*lits)[0];
  int64_t rank = x.type.getRank();
  llvm::SmallVector<int64_t> axes;
  if (n.hasInput(1))
    for (int64_t k = 0; k < (*lits)[1].numElements(); ++k)
      axes.push_back((*lits)[1].i(k));
  else if (auto a = n.intsAttr("axes"))
    axes = *a;
  if (axes.empty() && n.intAttr("noop_with_empty_axes", 0))
    return n.setConstant(0, fromLit(x));
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    auto axis = n.normalizeAxis(a, rank, "axes");
    if (failed(axis))
      return failure();
    reduced[size_t(*axis)] = true;
  }
  bool keep = n.intAttr("keepdims", 1) != 0;
  llvm::SmallVector<int64_t> outShape, keptShape;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[size_t(d)] ? 1 : x.shape()[d]);
    if (!reduced[size_t(d)] || keep)
      outShape.push_back(keptShape.back());
  }
  Lit out;
  out.type = RankedTensorType::get(outShape, x.type.getElementType());
  int64_t count = out.numElements();
  if (x.isFloat())
    out.floats.assign(size_t(count), 1.0);
  else
    out.ints.assign(size_t(count), 1);
  std::vector<int64_t> inStrides = stridesOf(x.shape()),
                       outStrides = stridesOf(keptShape);
  for (int64_t e = 0; e < x.numElements(); ++e) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[size_t(d)])
        at += (e / inStrides[size_t(d)]) % x.shape()[d] * outStrides[size_t(d)];
    if (x.isFloat())
      out.floats[size_t(at)] *= x.f(e);
    else
      out.ints[size_t(at)] *= x.i(e);
  }
  return n.setConstant(0, fromLit(out));
}

/// GatherElements of data or indices known only at run time (RoBERTa's
/// token_type_ids buffer read at positions counted from the input ids): a
/// tcc.gather of the flattened data at each element's flat index, a
/// constant base (the element's own coordinates off the axis) plus its
/// index along the axis times the axis's stride. An index outside
/// [-dim, dim) is moved past the data, so it reads as any out-of-range
/// gather index does (the interpreter reports it) instead of another row.
LogicalResult runtimeGatherElements(NodeImporter &n) {
  RankedTensorType dataType = n.inputType(0), idxType = n.inputType(1);
  if (!dataType.hasStaticShape() || !idxType.hasStaticShape())
    return n.unsupported("an input has a dynamic shape");
  int64_t rank = dataType.getRank();
  if (idxType.getRank() != rank)
    return n.fail("indices have rank " + std::to_string(idxType.getRank()) +
                  ", data rank " + std::to_string(rank));
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && idxType.getDimSize(d) > dataType.getDimSize(d))
      return n.fail("indices dim " + std::to_string(d) + " is " +
                    std::to_string(idxType.getDimSize(d)) + ", past data's " +
                    std::to_string(dataType.getDimSize(d)));
  std::vector<int64_t> dataStrides = stridesOf(dataType.getShape()),
                       idxStrides = stridesOf(idxType.getShape());
  const int64_t dim = dataType.getDimSize(*axis);
  const int64_t total = dataType.getNumElements();
  Type i64 = IntegerType::get(n.context(), 64);
  auto idx64 = RankedTensorType::get(idxType.getShape(), i64);
  llvm::SmallVector<int64_t> base(size_t(idxType.getNumElements()));
  for (int64_t k = 0; k < int64_t(base.size()); ++k) {
    int64_t at = 0;
    for (int64_t d = 0, rest = k; d < rank; ++d) {
      int64_t c = rest / idxStrides[d];
      rest %= idxStrides[d];
      if (d != *axis)
        at += c * dataStrides[d];
    }
    base[size_t(k)] = at;
  }
  Value idx = n.input(1);
  if (idxType.getElementType() != i64)
    idx = n.cast(idx, i64);
  auto scalar = [&](int64_t v) {
    return n.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, i64), llvm::APInt(64, uint64_t(v), true)));
  };
  auto negative = n.create<CmpOp>(CmpPredicate::lt, idx, scalar(0));
  auto wrapped = n.create<AddOp>(idx, scalar(dim));
  if (failed(negative) || failed(wrapped))
    return failure();
  auto norm = n.create<WhereOp>(*negative, *wrapped, idx);
  if (failed(norm))
    return failure();
  auto low = n.create<CmpOp>(CmpPredicate::lt, *norm, scalar(0));
  auto high = n.create<CmpOp>(CmpPredicate::ge, *norm, scalar(dim));
  auto along = n.create<MulOp>(*norm, scalar(dataStrides[*axis]));
  if (failed(low) || failed(high) || failed(along))
    return failure();
  auto outside = n.create<OrOp>(*low, *high);
  auto flat = n.create<AddOp>(
      *along, n.constant(DenseElementsAttr::get(idx64, llvm::ArrayRef(base))));
  if (failed(outside) || failed(flat))
    return failure();
  auto picked = n.create<WhereOp>(*outside, scalar(total), *flat);
  auto table = n.reshape(n.input(0), {total});
  if (failed(picked) || failed(table))
    return failure();
  auto op = n.create<GatherOp>(*table, *picked, int64_t(0));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// GatherElements(data, indices, axis): out[i] = data[i with i[axis] =
/// indices[i]], evaluated at import time when both are constants.
LogicalResult convertGatherElements(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({"axis"})))
    return failure();
  if (!n.constantInput(0) || !n.constantInput(1))
    return runtimeGatherElements(n);
  auto lits = constantInputs(n);
  if (failed(lits))
    return failure();
  const Lit &data = (*lits)[0], &indices = (*lits)[1];
  int64_t rank = data.type.getRank();
  if (indices.type.getRank() != rank)
    return n.fail("indices have rank " +
                  std::to_string(indices.type.getRank()) + ", data rank " +
                  std::to_string(rank));
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  int64_t bad = -1;
  std::vector<int64_t> src =
      elementTargetsFlat(indices, data.shape(), *axis, bad);
  if (bad >= 0)
    return n.fail("index " + std::to_string(indices.i(bad)) +
                  " is out of range for dim " +
                  std::to_string(data.shape()[*axis]));
  auto type = RankedTensorType::get(indices.shape(),
                                    data.type.getElementType());
  Lit out = selectElements(data, type, src);
  return n.setConstant(0, fromLit(out));
}

/// GatherND(data, indices, batch_dims): each innermost row of `indices`
/// picks a slice of data (after batch_dims leading dims shared by both).
/// GatherND's data (input 0) with the first m dims (the length of an index
/// row of `indices`, shaped `indexShape`) merged into one, the table the
/// flat row numbers index; or the error when the rows do not fit.
FailureOr<Value> gatherNDTable(NodeImporter &n,
                               llvm::ArrayRef<int64_t> indexShape) {
  RankedTensorType data = n.inputType(0);
  int64_t r = data.getRank(), q = int64_t(indexShape.size());
  int64_t m = q ? indexShape[size_t(q - 1)] : 0;
  if (q < 1 || m < 1 || m > r)
    return n.fail("index rows of length " + std::to_string(m) +
                  " do not fit data rank " + std::to_string(r));
  llvm::SmallVector<int64_t> merged{1};
  for (int64_t d = 0; d < m; ++d)
    merged[0] *= data.getDimSize(d);
  for (int64_t d = m; d < r; ++d)
    merged.push_back(data.getDimSize(d));
  return n.reshape(n.input(0), merged);
}

/// GatherND of data computed at run time with known indices and no batch
/// dims (advanced indexing, `mask[idx0, idx1]`, as the dynamo exporter
/// writes it): the indexed dims are merged into one and gathered by flat
/// row numbers, which the ordinary gather handles.
LogicalResult gatherNDOfRuntimeData(NodeImporter &n, DenseElementsAttr idx) {
  RankedTensorType data = n.inputType(0);
  auto indices = toLit(idx);
  if (!indices)
    return n.unsupported("indices are too large to evaluate at import time");
  auto table = gatherNDTable(n, indices->shape());
  if (failed(table))
    return failure();
  int64_t m = indices->shape().back(), bad = -1;
  Lit flat;
  flat.type = RankedTensorType::get(indices->shape().drop_back(),
                                    IntegerType::get(n.context(), 64));
  flat.ints = indexRowsFlat(*indices, data.getShape().take_front(m), bad);
  if (bad >= 0)
    return n.fail("index row " + std::to_string(bad) + " is out of range");
  auto op = n.create<GatherOp>(*table, n.constant(fromLit(flat)), int64_t(0));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// GatherND with indices known only at run time and no batch dims
/// (`logits[torch.arange(B), last_token]`, transformers' sequence
/// classifiers): each index row (i_0, ..., i_{m-1}) becomes the flat row
/// sum of i_j * stride_j of data's first m dims merged, negative i_j
/// counting from the end of dim j; a row with an index outside its dim
/// points past the table, where the compiled gather reads zeros (as
/// runtimeGatherElements). The gradient is the gather's.
LogicalResult runtimeGatherND(NodeImporter &n) {
  RankedTensorType data = n.inputType(0), idxType = n.inputType(1);
  if (!data.hasStaticShape() || !idxType.hasStaticShape())
    return n.unsupported("an input has a dynamic shape");
  auto table = gatherNDTable(n, idxType.getShape());
  if (failed(table))
    return failure();
  int64_t q = idxType.getRank(), m = idxType.getDimSize(q - 1);
  int64_t rows = 1;
  for (int64_t d = 0; d < m; ++d)
    rows *= data.getDimSize(d);
  std::vector<int64_t> strides = stridesOf(data.getShape().take_front(m));
  Type i64 = IntegerType::get(n.context(), 64);
  auto scalar = [&](int64_t v) {
    return n.constant(DenseElementsAttr::get(
        RankedTensorType::get({}, i64), llvm::APInt(64, uint64_t(v), true)));
  };
  Value idx = n.input(1);
  if (idxType.getElementType() != i64)
    idx = n.cast(idx, i64);
  llvm::ArrayRef<int64_t> rowShape = idxType.getShape().drop_back();
  Value flat, outside;
  for (int64_t j = 0; j < m; ++j) {
    llvm::SmallVector<int64_t> lo(size_t(q), 0), hi(idxType.getShape()),
        step(size_t(q), 1);
    lo[size_t(q - 1)] = j;
    hi[size_t(q - 1)] = j + 1;
    auto column = n.create<SliceOp>(idx, lo, hi, step);
    if (failed(column))
      return failure();
    auto col = n.reshape(*column, rowShape);
    if (failed(col))
      return failure();
    const int64_t dim = data.getDimSize(j);
    auto negative = n.create<CmpOp>(CmpPredicate::lt, *col, scalar(0));
    auto wrapped = n.create<AddOp>(*col, scalar(dim));
    if (failed(negative) || failed(wrapped))
      return failure();
    auto norm = n.create<WhereOp>(*negative, *wrapped, *col);
    if (failed(norm))
      return failure();
    auto low = n.create<CmpOp>(CmpPredicate::lt, *norm, scalar(0));
    auto high = n.create<CmpOp>(CmpPredicate::ge, *norm, scalar(dim));
    auto along = n.create<MulOp>(*norm, scalar(strides[size_t(j)]));
    if (failed(low) || failed(high) || failed(along))
      return failure();
    auto out = n.create<OrOp>(*low, *high);
    if (failed(out))
      return failure();
    if (j == 0) {
      flat = *along;
      outside = *out;
      continue;
    }
    auto sum = n.create<AddOp>(flat, *along);
    auto any = n.create<OrOp>(outside, *out);
    if (failed(sum) || failed(any))
      return failure();
    flat = *sum;
    outside = *any;
  }
  auto picked = n.create<WhereOp>(outside, scalar(rows), flat);
  if (failed(picked))
    return failure();
  auto op = n.create<GatherOp>(*table, *picked, int64_t(0));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

LogicalResult convertGatherND(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({"batch_dims"})))
    return failure();
  if (n.intAttr("batch_dims", 0) == 0 &&
      (!n.constantInput(0) || !n.constantInput(1))) {
    if (DenseElementsAttr idx = n.constantInput(1))
      return gatherNDOfRuntimeData(n, idx);
    return runtimeGatherND(n);
  }
  if (!n.constantInput(0) || !n.constantInput(1))
    return n.unsupported("batch_dims " +
                         std::to_string(n.intAttr("batch_dims", 0)) +
                         " on inputs computed at run time (only batch_dims "
                         "0 runs at run time)");
  auto lits = constantInputs(n);
  if (failed(lits))
    return failure();
  const Lit &data = (*lits)[0], &indices = (*lits)[1];
  int64_t b = n.intAttr("batch_dims", 0), r = data.type.getRank(),
          q = indices.type.getRank();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return n.fail("batch_dims " + std::to_string(b) +
                  " does not fit data rank " + std::to_string(r) +
                  " and indices rank " + std::to_string(q));
  int64_t m = indices.shape()[q - 1];
  if (m < 1 || b + m > r)
    return n.fail("index rows of length " + std::to_string(m) +
                  " do not fit data rank " + std::to_string(r) +
                  " after batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (data.shape()[d] != indices.shape()[d])
      return n.fail("batch dim " + std::to_string(d) + " differs");
  llvm::SmallVector<int64_t> outShape(indices.shape().drop_back());
  for (int64_t d = b + m; d < r; ++d)
    outShape.push_back(data.shape()[d]);
  int64_t sliceSize = 1;
  for (int64_t d = b + m; d < r; ++d)
    sliceSize *= data.shape()[d];
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d)
    batch *= data.shape()[d];
  int64_t rows = indices.numElements() / m, rowsPerBatch = rows / batch;
  std::vector<int64_t> strides = stridesOf(data.shape());
  std::vector<int64_t> src;
  llvm::SmallVector<int64_t> multi(b + m);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t bi = row / rowsPerBatch;
    for (int64_t d = b - 1, rest = bi; d >= 0; --d) {
      multi[d] = rest % data.shape()[d];
      rest /= data.shape()[d];
    }
    for (int64_t j = 0; j < m; ++j)
      multi[b + j] = indices.i(row * m + j);
    int64_t flat = flatIndex(data.shape().take_front(b + m), multi,
                             llvm::ArrayRef<int64_t>(strides).take_front(b + m));
    if (flat < 0)
      return n.fail("index row " + std::to_string(row) + " is out of range");
    for (int64_t e = 0; e < sliceSize; ++e)
      src.push_back(flat + e);
  }
  auto type = RankedTensorType::get(outShape, data.type.getElementType());
  return n.setConstant(0, fromLit(selectElements(data, type, src)));
}

} // namespace

void registerConstOnlyConverters(ConverterTable &table) {
  table["CumSum"] = convertCumSum;
  table["ReduceProd"] = convertReduceProd;
  table["GatherElements"] = convertGatherElements;
  table["GatherND"] = convertGatherND;
}

} // namespace tcc::onnx_import
