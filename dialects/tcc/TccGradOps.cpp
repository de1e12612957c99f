// Verifiers and type inference of the backward, loss and optimizer ops
// (TccGradOps.td, TccTrainOps.td).
#include "tcc/TccOps.h"
#include "tcc/TccShapes.h"

using namespace mlir;
using namespace tcc;

/// A default-valued integer attribute as an adaptor has it (null: 0).
static int64_t intAttr(IntegerAttr a) { return a ? a.getInt() : 0; }

static bool isScalar(Value v) { return tensorTypeOf(v).getRank() == 0; }

static LogicalResult verifyAxis(Operation *op, Value v, int64_t axis) {
  if (axis < 0 || axis >= tensorTypeOf(v).getRank())
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << tensorTypeOf(v).getRank();
  return success();
}

LogicalResult SoftmaxGradOp::verify() { return verifyAxis(*this, getResult(), getAxis()); }
LogicalResult LogSoftmaxGradOp::verify() {
  return verifyAxis(*this, getResult(), getAxis());
}

namespace {
/// The result types of tcc.layer_norm_grad on `input` normalised over
/// [axis, rank): input_grad, scale_grad, bias_grad and, `withSum`,
/// input_grad_sum.
SmallVector<Type> layerNormGradTypes(RankedTensorType in, int64_t axis, bool withSum) {
  auto norm = RankedTensorType::get(in.getShape().drop_front(axis), in.getElementType());
  // Sums over all rows: f32 for 16-bit input, as the parameters they update.
  Type sumType = in.getElementType();
  if (sumType.isBF16() || sumType.isF16())
    sumType = Float32Type::get(in.getContext());
  SmallVector<Type> types = {in, norm.clone(sumType), norm.clone(sumType)};
  if (withSum)
    types.push_back(norm.clone(sumType));
  return types;
}
} // namespace

void LayerNormGradOp::build(OpBuilder &b, OperationState &state, Value input,
                            Value scale, Value resultGrad, Value residualGrad,
                            IntegerAttr axis, FloatAttr epsilon, bool withInputGradSum) {
  auto in = tensorTypeOf(input);
  int64_t a = std::clamp<int64_t>(axis.getInt(), 0, std::max<int64_t>(in.getRank() - 1, 0));
  SmallVector<Type> types = layerNormGradTypes(in, a, withInputGradSum);
  build(b, state, types[0], types[1], types[2], withInputGradSum ? types[3] : Type(),
        input, scale, resultGrad, residualGrad, axis, epsilon);
}

LogicalResult LayerNormGradOp::verify() {
  auto in = tensorTypeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << in.getRank();
  if (tensorTypeOf(getResultGrad()) != in)
    return emitOpError("result_grad must have the input's type");
  auto norm = RankedTensorType::get(in.getShape().drop_front(axis), in.getElementType());
  if (Value scale = getScale(); scale && tensorTypeOf(scale) != norm)
    return emitOpError("scale must be ") << norm;
  if (Value residual = getResidualGrad();
      residual && tensorTypeOf(residual) != in)
    return emitOpError("residual_grad must have the input's type");
  SmallVector<Type> want = layerNormGradTypes(in, axis, bool(getInputGradSum()));
  if (TypeRange(getResultTypes()) != TypeRange(want)) {
    InFlightDiagnostic diag = emitOpError("results must be (");
    llvm::interleaveComma(want, diag);
    return diag << ")";
  }
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  // Autodiff copies the operands of a verified tcc.attention; only the result
  // gradient is new and must have the forward result's type.
  auto q = tensorTypeOf(adaptor.getQuery());
  std::string error;
  const int64_t columns[3] = {intAttr(adaptor.getQueryColumnAttr()), intAttr(adaptor.getKeyColumnAttr()),
                              intAttr(adaptor.getValueColumnAttr())};
  std::optional<AttentionDims> a =
      attentionDims(q.getShape(), tensorTypeOf(adaptor.getKey()).getShape(),
                    tensorTypeOf(adaptor.getValue()).getShape(),
                    intAttr(adaptor.getHeadsAttr()),
                    intAttr(adaptor.getHeadDimAttr()), columns, error);
  if (!a)
    return emitOptionalError(loc, error);
  Type et = q.getElementType();
  auto expected = RankedTensorType::get(a->resultShape(), et);
  if (tensorTypeOf(adaptor.getResultGrad()) != expected)
    return emitOptionalError(loc, "result_grad must be ", expected);
  for (int i = 0; i < 3; ++i)
    inferred.push_back(RankedTensorType::get(a->gradShape(i), et));
  return success();
}

LogicalResult
AttentionQkvGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &inferred) {
  auto qkv = tensorTypeOf(adaptor.getQkv());
  std::string error;
  const int64_t columns[3] = {intAttr(adaptor.getQueryColumnAttr()),
                              intAttr(adaptor.getKeyColumnAttr()),
                              intAttr(adaptor.getValueColumnAttr())};
  int64_t heads = intAttr(adaptor.getHeadsAttr());
  if (heads <= 0)
    return emitOptionalError(loc,
                             "attention_qkv_grad reads token rows (heads > 0)");
  std::optional<AttentionDims> a =
      attentionDims(qkv.getShape(), qkv.getShape(), qkv.getShape(), heads,
                    intAttr(adaptor.getHeadDimAttr()), columns, error);
  if (!a)
    return emitOptionalError(loc, error);
  // The three column ranges tile the rows: every element of the result is
  // one of the three gradients.
  int64_t span = a->heads * a->d;
  SmallVector<int64_t> sorted(columns, columns + 3);
  llvm::sort(sorted);
  if (qkv.getDimSize(2) != 3 * span ||
      sorted != SmallVector<int64_t>{0, span, 2 * span})
    return emitOptionalError(loc, "query, key and value columns ", columns[0],
                             ", ", columns[1], ", ", columns[2],
                             " do not tile the ", qkv.getDimSize(2),
                             " columns of qkv in three ranges of ", span);
  auto expected = RankedTensorType::get(a->resultShape(), qkv.getElementType());
  if (tensorTypeOf(adaptor.getResultGrad()) != expected)
    return emitOptionalError(loc, "result_grad must be ", expected);
  inferred.push_back(qkv);
  return success();
}

LogicalResult GatherGradOp::verify() {
  auto data = getType();
  auto indices = tensorTypeOf(getIndices());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << data.getRank();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  auto grad = tensorTypeOf(getResultGrad());
  if (grad.getShape() != ArrayRef<int64_t>(shape) ||
      grad.getElementType() != data.getElementType())
    return emitOpError("result_grad ") << grad << " does not match a gather from " << data;
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto in = getType();
  auto grad = tensorTypeOf(getResultGrad());
  ArrayRef<int64_t> starts = getStarts(), limits = getLimits(), strides = getStrides();
  if (static_cast<int64_t>(starts.size()) != in.getRank() ||
      limits.size() != starts.size() || strides.size() != starts.size())
    return emitOpError("starts, limits and strides need one entry per dim (")
           << in.getRank() << ")";
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (strides[d] == 0)
      return emitOpError("stride of dim ") << d << " is 0";
    shape.push_back(sliceLength(starts[d], limits[d], strides[d]));
  }
  if (grad.getShape() != ArrayRef<int64_t>(shape) ||
      grad.getElementType() != in.getElementType())
    return emitOpError("result_grad ") << grad << " is not the slice of " << in;
  return success();
}

static LogicalResult checkLabels(Operation *op, Value logits, Value labels) {
  auto l = tensorTypeOf(logits);
  if (l.getRank() < 1 ||
      tensorTypeOf(labels).getShape() != l.getShape().drop_back())
    return op->emitOpError("labels ")
           << labels.getType() << " must have the leading dims of logits " << l;
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  auto l = tensorTypeOf(adaptor.getLogits());
  if (l.getRank() < 1 ||
      tensorTypeOf(adaptor.getLabels()).getShape() != l.getShape().drop_back())
    return emitOptionalError(loc, "labels ", adaptor.getLabels().getType(),
                             " must have the leading dims of logits ", l);
  // A loss sums many rows: from 16-bit logits it comes out in f32.
  Type element = l.getElementType();
  if (element.getIntOrFloatBitWidth() < 32)
    element = Float32Type::get(element.getContext());
  auto scalar = RankedTensorType::get({}, element);
  inferred.append({scalar, scalar});
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(checkLabels(*this, getLogits(), getLabels())))
    return failure();
  Type lossType = getType().getElementType();
  if (lossType.getIntOrFloatBitWidth() < 32)
    lossType = Float32Type::get(getContext());
  if (!isScalar(getLossSumGrad()) ||
      tensorTypeOf(getLossSumGrad()).getElementType() != lossType)
    return emitOpError("loss_sum_grad must be a scalar of the loss's element "
                       "type (the logits', f32 for 16-bit logits)");
  if (getType() != getLogits().getType())
    return emitOpError("result must have the logits' type");
  return success();
}

/// An optimizer update's optional working copy: present with its result,
/// a bf16/f16 tensor of the f32 parameter's shape.
static LogicalResult verifyWorking(Operation *op, Value param, Value working,
                                   Value newWorking) {
  if (static_cast<bool>(working) != static_cast<bool>(newWorking))
    return op->emitOpError(
        "a working copy operand and result are needed together");
  if (!working)
    return success();
  auto p = llvm::cast<RankedTensorType>(param.getType());
  auto w = llvm::cast<RankedTensorType>(working.getType());
  if (!p.getElementType().isF32() ||
      !(w.getElementType().isBF16() || w.getElementType().isF16()) ||
      w.getShape() != p.getShape() || newWorking.getType() != w)
    return op->emitOpError("the working copy must be a bf16/f16 tensor of "
                           "the f32 parameter's shape, as its result");
  return success();
}

/// An update's gradient: the parameter's type, or a block of whole rows
/// (dim 0) of it: the elements `[offset, offset + numel(grad))`.
static LogicalResult verifyGradBlock(Operation *op, Value param, Value grad,
                                     int64_t offset) {
  auto p = llvm::cast<RankedTensorType>(param.getType());
  auto g = llvm::cast<RankedTensorType>(grad.getType());
  if (offset == 0 && g == p)
    return success();
  if (g.getElementType() != p.getElementType())
    return op->emitOpError("grad's element type differs from the param's");
  int64_t row = p.getRank() > 0 ? p.getNumElements() / std::max<int64_t>(
                                                          1, p.getDimSize(0))
                                : 1;
  if (g.getRank() != p.getRank() || p.getRank() == 0 ||
      g.getShape().drop_front() != p.getShape().drop_front() || row == 0 ||
      offset % row != 0)
    return op->emitOpError("grad must have the param's type, or be a block "
                           "of whole rows of it (dim 0) starting at a row's "
                           "first element (element_offset ")
           << offset << ")";
  if (offset < 0 || g.getNumElements() == 0 ||
      offset + g.getNumElements() > p.getNumElements())
    return op->emitOpError("the block [")
           << offset << ", " << offset + g.getNumElements()
           << ") of grad's elements is not inside the param's "
           << p.getNumElements() << " elements";
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  Type t = getParam().getType();
  if (getNewParam().getType() != t)
    return emitOpError("param and new_param types differ");
  if (failed(verifyGradBlock(*this, getParam(), getGrad(),
                             getElementOffset())))
    return failure();
  if (!isScalar(getLr()))
    return emitOpError("lr must be a scalar");
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer != (getMomentum().convertToDouble() != 0.0) ||
      hasBuffer != static_cast<bool>(getNewMomentumBuffer()))
    return emitOpError("a momentum buffer operand and result are needed exactly when momentum != 0");
  if (hasBuffer && (getMomentumBuffer().getType() != t || getNewMomentumBuffer().getType() != t))
    return emitOpError("momentum buffer type differs from the param's");
  if (getSkip() && !isScalar(getSkip()))
    return emitOpError("skip must be a scalar");
  return verifyWorking(*this, getParam(), getWorking(), getNewWorking());
}

LogicalResult AdamwUpdateOp::verify() {
  Type t = getParam().getType();
  for (Value v : {getExpAvg(), getExpAvgSq(), getNewParam(), getNewExpAvg(),
                  getNewExpAvgSq()})
    if (v.getType() != t)
      return emitOpError("param, moments and results must share one type");
  if (failed(verifyGradBlock(*this, getParam(), getGrad(),
                             getElementOffset())))
    return failure();
  if (!isScalar(getLr()) || !isScalar(getStep()))
    return emitOpError("lr and step must be scalars");
  if (getSkip() && !isScalar(getSkip()))
    return emitOpError("skip must be a scalar");
  return verifyWorking(*this, getParam(), getWorking(), getNewWorking());
}
