// Type inference and verifiers of the tcc ops. Every shape rule lives in an
// inferReturnTypes (checked against the declared types by the verifier) or a
// verify(); messages are lowercase with no trailing period.
#include "tcc/TccOps.h"
#include "tcc/TccShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace tcc;

/// A default-valued integer attribute as an adaptor has it (null: 0).
static int64_t intAttr(IntegerAttr a) { return a ? a.getInt() : 0; }

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + std::to_string(d);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  auto type = llvm::dyn_cast<RankedTensorType>(getInitialValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("initial value must be a statically shaped tensor");
  return success();
}

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getNameAttr());
  if (!param)
    return emitOpError("'") << getName() << "' does not name a tcc.param";
  if (param.getType() != getType())
    return emitOpError("result type ")
           << getType() << " differs from the parameter's " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBroadcast(std::optional<Location> loc, TypeRange inputs,
                                    Type elementType,
                                    SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Type t : inputs) {
    auto broadcast = broadcastShapes(shape, llvm::cast<RankedTensorType>(t).getShape());
    if (!broadcast)
      return emitOptionalError(loc, "operand shapes ", shapeStr(shape), " and ",
                               shapeStr(llvm::cast<RankedTensorType>(t).getShape()),
                               " do not broadcast");
    shape = *broadcast;
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

static LogicalResult inferBinary(std::optional<Location> loc, Value lhs, Value rhs,
                                 bool boolResult, SmallVectorImpl<Type> &inferred) {
  Type elem = tensorTypeOf(lhs).getElementType();
  if (elem != tensorTypeOf(rhs).getElementType())
    return emitOptionalError(loc, "operand element types ", elem, " and ",
                             tensorTypeOf(rhs).getElementType(), " differ");
  Type resultElem = boolResult ? IntegerType::get(lhs.getContext(), 1) : elem;
  return inferBroadcast(loc, {lhs.getType(), rhs.getType()}, resultElem, inferred);
}

#define TCC_INFER_BINARY(OP, BOOL)                                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                            \
                                     SmallVectorImpl<Type> &inferred) {          \
    return inferBinary(loc, adaptor.getLhs(), adaptor.getRhs(), BOOL, inferred); \
  }
TCC_INFER_BINARY(AddOp, false)
TCC_INFER_BINARY(SubOp, false)
TCC_INFER_BINARY(MulOp, false)
TCC_INFER_BINARY(DivOp, false)
TCC_INFER_BINARY(PowOp, false)
TCC_INFER_BINARY(MaxOp, false)
TCC_INFER_BINARY(MinOp, false)
TCC_INFER_BINARY(AndOp, false)
TCC_INFER_BINARY(OrOp, false)
TCC_INFER_BINARY(CmpOp, true)
#undef TCC_INFER_BINARY

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  Type elem = tensorTypeOf(adaptor.getOnTrue()).getElementType();
  if (elem != tensorTypeOf(adaptor.getOnFalse()).getElementType())
    return emitOptionalError(
        loc, "branch element types ", elem, " and ",
        tensorTypeOf(adaptor.getOnFalse()).getElementType(), " differ");
  return inferBroadcast(loc, adaptor.getOperands().getTypes(), elem, inferred);
}


LogicalResult CastOp::verify() {
  if (tensorTypeOf(getInput()).getShape() != getType().getShape())
    return emitOpError("result shape ")
           << shapeStr(getType().getShape()) << " differs from the input's "
           << shapeStr(tensorTypeOf(getInput()).getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto in = tensorTypeOf(getInput());
  if (in.getElementType() != getType().getElementType())
    return emitOpError("result element type differs from the input's");
  if (!isBroadcastableTo(in.getShape(), getType().getShape()))
    return emitOpError("input shape ")
           << shapeStr(in.getShape()) << " does not broadcast to "
           << shapeStr(getType().getShape());
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = tensorTypeOf(getInput());
  if (in.getElementType() != getType().getElementType())
    return emitOpError("result element type differs from the input's");
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError("cannot reshape ")
           << in.getNumElements() << " elements into " << shapeStr(getType().getShape());
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(), " entries for rank ",
                             in.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOptionalError(loc, "perm is not a permutation of [0, ", in.getRank(), ")");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(adaptor.getInput());
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits(),
                    strides = adaptor.getStrides();
  int64_t rank = in.getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "starts, limits and strides need one entry per dim (", rank, ")");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = in.getDimSize(d), s = starts[d], l = limits[d], st = strides[d];
    bool ok = st > 0 ? (0 <= s && s <= l && l <= dim)
                     : (st < 0 && -1 <= l && l <= s && s < dim);
    if (!ok)
      return emitOptionalError(loc, "slice bounds (", s, ", ", l, ", ", st,
                               ") are invalid for dim ", d, " of size ", dim);
    shape.push_back(sliceLength(s, l, st));
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = tensorTypeOf(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : adaptor.getInputs()) {
    auto t = tensorTypeOf(v);
    if (t.getRank() != first.getRank() || t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "inputs differ in rank or element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(loc, "inputs differ in dim ", d, " off the concat axis");
    shape[axis] += t.getDimSize(axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ", in.getRank());
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return emitOptionalError(loc, "split sizes must be non-negative");
    SmallVector<int64_t> shape(in.getShape());
    shape[axis] = size;
    inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
    total += size;
  }
  if (total != in.getDimSize(axis))
    return emitOptionalError(loc, "split sizes add up to ", total, ", not the dim size ",
                             in.getDimSize(axis));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto data = tensorTypeOf(adaptor.getData());
  auto indices = tensorTypeOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto table = tensorTypeOf(adaptor.getTable());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "table must be [vocab, dim], got rank ", table.getRank());
  SmallVector<int64_t> shape(tensorTypeOf(adaptor.getIds()).getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(input);
  SmallVector<bool> reduced(in.getRank(), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= in.getRank() || reduced[a])
      return emitOptionalError(loc, "axes must be distinct dims in [0, ", in.getRank(), ")");
    reduced[a] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!reduced[d])
      shape.push_back(in.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

#define TCC_INFER_REDUCE(OP)                                                   \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,\
                                     Adaptor adaptor,                           \
                                     SmallVectorImpl<Type> &inferred) {         \
    return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),             \
                       adaptor.getKeepdims(), inferred);                       \
  }
TCC_INFER_REDUCE(ReduceSumOp)
TCC_INFER_REDUCE(ReduceMeanOp)
TCC_INFER_REDUCE(ReduceMaxOp)
TCC_INFER_REDUCE(ReduceMinOp)
#undef TCC_INFER_REDUCE

static LogicalResult inferAxisOp(std::optional<Location> loc, Value input, int64_t axis,
                                 SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(input);
  if (axis < 0 || axis >= in.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ", in.getRank());
  inferred.push_back(in);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferAxisOp(loc, adaptor.getInput(), adaptor.getAxis(), inferred);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return inferAxisOp(loc, adaptor.getInput(), adaptor.getAxis(), inferred);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferAxisOp(loc, adaptor.getInput(), adaptor.getAxis(), inferred);
}

LogicalResult LayerNormOp::verify() {
  auto in = tensorTypeOf(getInput());
  ArrayRef<int64_t> normShape = in.getShape().drop_front(getAxis());
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    auto t = tensorTypeOf(v);
    if (t.getShape() != normShape || t.getElementType() != in.getElementType())
      return emitOpError("scale and bias must be ")
             << shapeStr(normShape) << " of " << in.getElementType() << ", got " << t;
  }
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("epsilon must be non-negative");
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto in = tensorTypeOf(adaptor.getInput());
  inferred.push_back(in);
  inferred.push_back(RankedTensorType::get(in.getShape(), IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  if (getOffset() && tensorTypeOf(getOffset()).getRank() != 0)
    return emitOpError("offset must be an i64 scalar");
  if (Value rows = getRows()) {
    auto r = tensorTypeOf(rows);
    int64_t n = tensorTypeOf(getInput()).getNumElements();
    if (r.getRank() != 1 || r.getDimSize(0) == 0 || n % r.getDimSize(0) != 0)
      return emitOpError("rows must be 1-D and divide the input's ")
             << n << " elements";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and attention
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = tensorTypeOf(adaptor.getLhs()),
       rhs = tensorTypeOf(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2");
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  int64_t m = lhs.getDimSize(adaptor.getTransposeLhs() ? lr - 1 : lr - 2);
  int64_t k = lhs.getDimSize(adaptor.getTransposeLhs() ? lr - 2 : lr - 1);
  int64_t k2 = rhs.getDimSize(adaptor.getTransposeRhs() ? rr - 1 : rr - 2);
  int64_t n = rhs.getDimSize(adaptor.getTransposeRhs() ? rr - 2 : rr - 1);
  if (k != k2)
    return emitOptionalError(loc, "contraction dims differ: ", k, " vs ", k2);
  auto batch = broadcastShapes(lhs.getShape().drop_back(2), rhs.getShape().drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dims do not broadcast");
  batch->push_back(m);
  batch->push_back(n);
  inferred.push_back(RankedTensorType::get(*batch, lhs.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = tensorTypeOf(adaptor.getA()), b = tensorTypeOf(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "a and b must be matrices");
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "operand element types differ");
  int64_t m = a.getDimSize(adaptor.getTransposeA() ? 1 : 0);
  int64_t k = a.getDimSize(adaptor.getTransposeA() ? 0 : 1);
  int64_t k2 = b.getDimSize(adaptor.getTransposeB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransposeB() ? 0 : 1);
  if (k != k2)
    return emitOptionalError(loc, "contraction dims differ: ", k, " vs ", k2);
  if (Value c = adaptor.getC()) {
    if (!isBroadcastableTo(tensorTypeOf(c).getShape(), {m, n}) ||
        tensorTypeOf(c).getElementType() != a.getElementType())
      return emitOptionalError(loc, "c does not broadcast to [", m, "x", n, "]");
  }
  if (Value bias = adaptor.getBias()) {
    auto type = tensorTypeOf(bias);
    if (type.getRank() != 1 || type.getDimSize(0) != n ||
        type.getElementType() != a.getElementType())
      return emitOptionalError(loc, "bias must be [", n, "] of the operands' type");
  }
  inferred.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  if (adaptor.getWithBiasGrad()) {
    if (adaptor.getBias())
      return emitOptionalError(loc,
                               "with_bias_grad takes no bias (one epilogue)");
    inferred.push_back(RankedTensorType::get({m}, a.getElementType()));
  }
  return success();
}

namespace tcc {
/// tcc.attention's or tcc.attention_grad's dims (the op verified).
template <class Op> AttentionDims attentionDimsOf(Op op) {
  std::string error;
  const int64_t columns[3] = {int64_t(op.getQueryColumn()), int64_t(op.getKeyColumn()),
                              int64_t(op.getValueColumn())};
  std::optional<AttentionDims> a = attentionDims(
      tensorTypeOf(op.getQuery()).getShape(),
      tensorTypeOf(op.getKey()).getShape(),
      tensorTypeOf(op.getValue()).getShape(), int64_t(op.getHeads()),
      int64_t(op.getHeadDim()), columns, error);
  assert(a && "getDims() of an unverified attention op");
  return *a;
}
} // namespace tcc

AttentionDims AttentionOp::getDims() { return attentionDimsOf(*this); }
AttentionDims AttentionGradOp::getDims() { return attentionDimsOf(*this); }
AttentionDims AttentionQkvGradOp::getDims() { return attentionDimsOf(*this); }

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto q = tensorTypeOf(adaptor.getQuery()), k = tensorTypeOf(adaptor.getKey()),
       v = tensorTypeOf(adaptor.getValue());
  if (q.getElementType() != k.getElementType() || q.getElementType() != v.getElementType())
    return emitOptionalError(loc, "query, key and value element types differ");
  std::string error;
  const int64_t columns[3] = {intAttr(adaptor.getQueryColumnAttr()), intAttr(adaptor.getKeyColumnAttr()),
                              intAttr(adaptor.getValueColumnAttr())};
  std::optional<AttentionDims> a =
      attentionDims(q.getShape(), k.getShape(), v.getShape(), intAttr(adaptor.getHeadsAttr()),
                    intAttr(adaptor.getHeadDimAttr()), columns, error);
  if (!a)
    return emitOptionalError(loc, error);
  if (Value m = adaptor.getKeyMask()) {
    auto mt = tensorTypeOf(m);
    // Packed tokens (tcc-pack-tokens: one sequence per batch row) or packed
    // documents (tcc-pack-documents: up to one per token): the row offsets
    // of the sequences.
    if (mt.getElementType().isInteger(32)) {
      int64_t rows = a->batch, tokens = rows * a->tq;
      if (mt.getRank() != 1 ||
          (mt.getDimSize(0) != rows + 1 && mt.getDimSize(0) != tokens + 1) || a->tq != a->tk)
        return emitOptionalError(loc, "cu_seqlens key_mask must be [", rows + 1, "] or [",
                                 tokens + 1, "] of i32, with queries as long as keys");
    } else {
      bool okType = mt.getElementType().isInteger(1) || mt.getElementType() == q.getElementType();
      if (!okType || mt.getShape() != ArrayRef<int64_t>{a->batch, a->tk})
        return emitOptionalError(loc, "key_mask must be [", a->batch, "x", a->tk, "] of i1 or ",
                                 q.getElementType());
    }
  }
  inferred.push_back(RankedTensorType::get(a->resultShape(), q.getElementType()));
  return success();
}

/// sgd_update's result types as a function type prints them: `T` alone or
/// `(T, ...)`, the optional momentum buffer and working copy present as
/// their operands are (so the segment sizes need not be spelled out).
static ParseResult
parseUpdateResults(OpAsmParser &parser,
                   std::optional<OpAsmParser::UnresolvedOperand> buffer,
                   std::optional<OpAsmParser::UnresolvedOperand> working,
                   Type &newParam, Type &newBuffer, Type &newWorking) {
  SmallVector<Type> types;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (failed(parser.parseOptionalLParen())) {
    if (parser.parseType(newParam))
      return failure();
    types.push_back(newParam);
  } else if (parser.parseTypeList(types) || parser.parseRParen()) {
    return failure();
  }
  size_t expected = 1 + (buffer ? 1 : 0) + (working ? 1 : 0);
  if (types.size() != expected)
    return parser.emitError(loc)
           << "expected " << expected << " result types";
  newParam = types[0];
  if (buffer)
    newBuffer = types[1];
  if (working)
    newWorking = types.back();
  return success();
}

static void printUpdateResults(OpAsmPrinter &p, Operation *, Value, Value,
                               Type newParam, Type newBuffer,
                               Type newWorking) {
  if (!newBuffer && !newWorking) {
    p << newParam;
    return;
  }
  p << '(' << newParam;
  for (Type t : {newBuffer, newWorking})
    if (t)
      p << ", " << t;
  p << ')';
}

#define GET_OP_CLASSES
#include "tcc/TccOps.cpp.inc"
