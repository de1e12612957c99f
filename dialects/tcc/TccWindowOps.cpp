// Type inference, cost and gradient rules of the convolution and pooling
// ops (tcc.conv, tcc.max_pool, tcc.avg_pool and their backward ops).
#include "tcc/TccOps.h"
#include "tcc/TccShapes.h"

using namespace mlir;
using namespace tcc;

namespace {

/// The window attributes of an op or adaptor, with the kernel size given.
template <class T> Window2d windowOf(T op, int64_t kh, int64_t kw) {
  Window2d w;
  w.kh = kh;
  w.kw = kw;
  w.sh = op.getStrideH();
  w.sw = op.getStrideW();
  w.padTop = op.getPadTop();
  w.padLeft = op.getPadLeft();
  w.padBottom = op.getPadBottom();
  w.padRight = op.getPadRight();
  w.dh = op.getDilationH();
  w.dw = op.getDilationW();
  return w;
}

/// The [N, C', OH, OW] result of sliding `w` over the [N, C, H, W] `input`
/// with `channels` output channels.
FailureOr<RankedTensorType> windowResult(std::optional<Location> loc,
                                         RankedTensorType in, const Window2d &w,
                                         int64_t channels) {
  if (in.getRank() != 4)
    return emitOptionalError(loc, "input must be [N, C, H, W], got ", in);
  if (*w.invalid())
    return emitOptionalError(loc, w.invalid());
  int64_t oh = w.outH(in.getDimSize(2)), ow = w.outW(in.getDimSize(3));
  if (oh < 1 || ow < 1)
    return emitOptionalError(loc, "the ", w.kh, "x", w.kw, " window (dilation ",
                             w.dh, "x", w.dw, ") does not fit the padded ",
                             in.getDimSize(2), "x", in.getDimSize(3), " input");
  return RankedTensorType::get({in.getDimSize(0), channels, oh, ow},
                               in.getElementType());
}

template <class Adaptor>
FailureOr<RankedTensorType> convResult(std::optional<Location> loc, Adaptor a) {
  auto in = tensorTypeOf(a.getInput()), wt = tensorTypeOf(a.getWeight());
  if (wt.getRank() != 4 || in.getRank() != 4)
    return emitOptionalError(
        loc, "input must be [N, C, H, W] and weight [M, C/group, KH, KW], got ",
        in, " and ", wt);
  if (wt.getElementType() != in.getElementType())
    return emitOptionalError(loc, "weight element type ", wt.getElementType(),
                             " differs from the input's ", in.getElementType());
  int64_t group = a.getGroup(), m = wt.getDimSize(0);
  if (group < 1 || in.getDimSize(1) % group || m % group ||
      wt.getDimSize(1) * group != in.getDimSize(1))
    return emitOptionalError(
        loc, "group ", group, " does not divide input channels ",
        in.getDimSize(1), " and output channels ", m, " with weight ", wt);
  return windowResult(loc, in, windowOf(a, wt.getDimSize(2), wt.getDimSize(3)),
                      m);
}

template <class Adaptor>
FailureOr<RankedTensorType> poolResult(std::optional<Location> loc, Adaptor a) {
  auto in = tensorTypeOf(a.getInput());
  return windowResult(loc, in, windowOf(a, a.getKernelH(), a.getKernelW()),
                      in.getRank() == 4 ? in.getDimSize(1) : 0);
}

/// A backward op's result_grad must have the forward result's type.
LogicalResult checkResultGrad(std::optional<Location> loc,
                              FailureOr<RankedTensorType> fwd,
                              Value resultGrad) {
  if (failed(fwd))
    return failure();
  if (tensorTypeOf(resultGrad) != *fwd)
    return emitOptionalError(loc, "result_grad must be ", *fwd, ", got ",
                             resultGrad.getType());
  return success();
}

int64_t convFlops(Value weight, Value result) {
  auto w = tensorTypeOf(weight);
  return 2 * tensorTypeOf(result).getNumElements() * w.getDimSize(1) *
         w.getDimSize(2) * w.getDimSize(3);
}

} // namespace

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto result = convResult(loc, adaptor);
  if (failed(result))
    return failure();
  if (Value b = adaptor.getBias()) {
    auto bt = tensorTypeOf(b);
    if (bt.getRank() != 1 || bt.getDimSize(0) != result->getDimSize(1) ||
        bt.getElementType() != result->getElementType())
      return emitOptionalError(loc, "bias must be [", result->getDimSize(1),
                               "] of ", result->getElementType(), ", got ", bt);
  }
  inferred.push_back(*result);
  return success();
}

LogicalResult ConvGradOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  if (failed(checkResultGrad(loc, convResult(loc, adaptor),
                             adaptor.getResultGrad())))
    return failure();
  auto w = tensorTypeOf(adaptor.getWeight());
  inferred.append(
      {adaptor.getInput().getType(), w,
       RankedTensorType::get({w.getDimSize(0)}, w.getElementType())});
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto result = poolResult(loc, adaptor);
  if (failed(result))
    return failure();
  inferred.push_back(*result);
  return success();
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto result = poolResult(loc, adaptor);
  if (failed(result))
    return failure();
  inferred.push_back(*result);
  return success();
}

LogicalResult MaxPoolGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  if (failed(checkResultGrad(loc, poolResult(loc, adaptor),
                             adaptor.getResultGrad())))
    return failure();
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AvgPoolGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  if (failed(checkResultGrad(loc, poolResult(loc, adaptor),
                             adaptor.getResultGrad())))
    return failure();
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

// A multiply and an add per result element and window tap; the backward op
// computes the input and the weight gradient, each as costly.
int64_t ConvOp::getFlops() { return convFlops(getWeight(), getResult()); }
int64_t ConvGradOp::getFlops() {
  return 2 * convFlops(getWeight(), getResultGrad());
}

Window2d ConvOp::getWindow() {
  auto w = tensorTypeOf(getWeight());
  return windowOf(*this, w.getDimSize(2), w.getDimSize(3));
}
Window2d ConvGradOp::getWindow() {
  auto w = tensorTypeOf(getWeight());
  return windowOf(*this, w.getDimSize(2), w.getDimSize(3));
}
Window2d MaxPoolOp::getWindow() {
  return windowOf(*this, getKernelH(), getKernelW());
}
Window2d MaxPoolGradOp::getWindow() {
  return windowOf(*this, getKernelH(), getKernelW());
}
Window2d AvgPoolOp::getWindow() {
  return windowOf(*this, getKernelH(), getKernelW());
}
Window2d AvgPoolGradOp::getWindow() {
  return windowOf(*this, getKernelH(), getKernelW());
}

//===----------------------------------------------------------------------===//
// Gradient rules: one backward op each, with the forward op's attributes.
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  auto grad = ConvGradOp::create(
      b, getLoc(), getInput(), getWeight(), resultGrads[0], getStrideH(),
      getStrideW(), getPadTop(), getPadLeft(), getPadBottom(), getPadRight(),
      getDilationH(), getDilationW(), getGroup());
  operandGrads.push_back(grad.getInputGrad());
  operandGrads.push_back(grad.getWeightGrad());
  if (getBias())
    operandGrads.push_back(grad.getBiasGrad());
  return success();
}

LogicalResult MaxPoolOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MaxPoolGradOp::create(
      b, getLoc(), getInput(), resultGrads[0], getKernelH(), getKernelW(),
      getStrideH(), getStrideW(), getPadTop(), getPadLeft(), getPadBottom(),
      getPadRight(), getDilationH(), getDilationW()));
  return success();
}

LogicalResult AvgPoolOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(AvgPoolGradOp::create(
      b, getLoc(), getInput(), resultGrads[0], getKernelH(), getKernelW(),
      getStrideH(), getStrideW(), getPadTop(), getPadLeft(), getPadBottom(),
      getPadRight(), getDilationH(), getDilationW(), getCountIncludePad()));
  return success();
}
