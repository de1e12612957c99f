// tcc.batch_norm: its verifier and its expansion into tcc ops, the one
// place that says how batch normalisation is computed (the interpreter's
// kernel is the independent check).
#include "tcc/TccBatchNorm.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

#define GET_OP_CLASSES
#include "tcc/TccBatchNorm.cpp.inc"

namespace tcc {

LogicalResult BatchNormOp::verify() {
  auto in = llvm::cast<RankedTensorType>(getInput().getType());
  auto stat = llvm::cast<RankedTensorType>(getMean().getType());
  if (in.getRank() < 2)
    return emitOpError("input of rank ") << in.getRank()
                                         << " has no channel dim";
  if (stat.getRank() != 1 || stat.getDimSize(0) != in.getDimSize(1) ||
      stat.getElementType() != in.getElementType())
    return emitOpError("scale, bias, mean and var must be [")
           << in.getDimSize(1) << "] of " << in.getElementType() << ", got "
           << stat;
  return success();
}

namespace {

Value splat(OpBuilder &b, Location loc, Type element, double v) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(b, loc,
                            DenseElementsAttr::get(type, b.getFloatAttr(element, v)));
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc, type.clone(shape), v);
}

/// running * momentum + batch * (1 - momentum), ONNX's form.
Value runningUpdate(OpBuilder &b, Location loc, Value running, Value batch,
                    double momentum) {
  Type elem = llvm::cast<RankedTensorType>(running.getType()).getElementType();
  Value a = MulOp::create(b, loc, running, splat(b, loc, elem, momentum));
  Value c = MulOp::create(b, loc, batch, splat(b, loc, elem, 1.0 - momentum));
  return AddOp::create(b, loc, a, c);
}

} // namespace

BatchNormValues expandBatchNorm(OpBuilder &b, BatchNormOp op,
                                BatchNormMode mode) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  auto type = llvm::cast<RankedTensorType>(x.getType());
  Type elem = type.getElementType();
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  // Per-channel values as [C, 1, ...] so they broadcast over dims 2...
  SmallVector<int64_t> channelShape(rank - 1, 1);
  channelShape[0] = channels;
  bool training = mode == BatchNormMode::Train ||
                  (mode == BatchNormMode::AsOp && op.getTraining());
  BatchNormValues out{Value(), op.getMean(), op.getVar()};
  Value centered, var;
  if (training) {
    SmallVector<int64_t> axes{0};
    for (int64_t d = 2; d < rank; ++d)
      axes.push_back(d);
    Value m = ReduceMeanOp::create(b, loc, x, axes, true);
    centered = SubOp::create(b, loc, x, m);
    Value v = ReduceMeanOp::create(
        b, loc, MulOp::create(b, loc, centered, centered), axes, true);
    var = reshape(b, loc, v, channelShape);
    Value batchVar = reshape(b, loc, v, {channels});
    if (mode == BatchNormMode::Train) {
      // PyTorch's running variance takes the unbiased batch variance.
      double n = double(type.getNumElements() / channels);
      batchVar = MulOp::create(b, loc, batchVar,
                               splat(b, loc, elem, n / std::max(n - 1, 1.0)));
    }
    double momentum = op.getMomentum().convertToDouble();
    out.newMean = runningUpdate(b, loc, op.getMean(),
                                reshape(b, loc, m, {channels}), momentum);
    out.newVar = runningUpdate(b, loc, op.getVar(), batchVar, momentum);
  } else {
    centered =
        SubOp::create(b, loc, x, reshape(b, loc, op.getMean(), channelShape));
    var = reshape(b, loc, op.getVar(), channelShape);
  }
  Value shifted = AddOp::create(
      b, loc, var, splat(b, loc, elem, op.getEpsilon().convertToDouble()));
  Value factor =
      MulOp::create(b, loc, RsqrtOp::create(b, loc, shifted),
                    reshape(b, loc, op.getScale(), channelShape));
  Value scaled = MulOp::create(b, loc, centered, factor);
  out.result = AddOp::create(b, loc, scaled,
                             reshape(b, loc, op.getBias(), channelShape));
  return out;
}

std::optional<std::string> batchCounterName(llvm::StringRef runningMean) {
  if (!runningMean.consume_back("running_mean") ||
      !(runningMean.empty() || runningMean.ends_with(".")))
    return std::nullopt;
  return (runningMean + "num_batches_tracked").str();
}

} // namespace tcc
