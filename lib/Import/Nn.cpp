// Neural-network ops with a dedicated tcc op: MatMul, Gemm, Softmax,
// LogSoftmax, LayerNormalization, Dropout.
#include "ConstFold.h"
#include "Importer.h"

using namespace mlir;

namespace tcc::onnx_import {

static LogicalResult expectFloat(NodeImporter &n, int i) {
  if (!llvm::isa<FloatType>(n.inputElementType(i)))
    return n.unsupported("integer or bool operands are not supported");
  return success();
}

/// `v` without a Transpose that swaps its two innermost dims, if it has one;
/// sets `transposed`. tcc.matmul transposes for free, so PyTorch's
/// `x @ W.T` (MatMul of Transpose(W)) reads W directly, which also keeps a
/// tied weight a single value for autodiff.
static Value peelTranspose(Value v, bool &transposed) {
  transposed = false;
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t)
    return v;
  llvm::ArrayRef<int64_t> perm = t.getPerm();
  int64_t r = perm.size();
  for (int64_t d = 0; d < r - 2; ++d)
    if (perm[d] != d)
      return v;
  if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
    return v;
  transposed = true;
  return t.getInput();
}

/// numpy matmul: a 1-D lhs is a row vector and a 1-D rhs a column vector,
/// the added dim being removed from the result again.
static LogicalResult convertMatMul(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(n.expectAttrs({})) ||
      failed(expectFloat(n, 0)) || failed(expectFloat(n, 1)))
    return failure();
  Value lhs = n.input(0), rhs = n.input(1);
  llvm::ArrayRef<int64_t> ls = n.inputShape(0), rs = n.inputShape(1);
  if (ls.empty() || rs.empty())
    return n.fail("operands must not be scalars");
  bool lhsVec = ls.size() == 1, rhsVec = rs.size() == 1;
  if (lhsVec) {
    auto r = n.reshape(lhs, {1, ls[0]});
    if (failed(r))
      return failure();
    lhs = *r;
  }
  if (rhsVec) {
    auto r = n.reshape(rhs, {rs[0], 1});
    if (failed(r))
      return failure();
    rhs = *r;
  }
  bool tl, tr;
  lhs = peelTranspose(lhs, tl);
  rhs = peelTranspose(rhs, tr);
  auto op = n.create<MatmulOp>(lhs, rhs, tl, tr);
  if (failed(op))
    return failure();
  Value result = *op;
  if (lhsVec || rhsVec) {
    llvm::SmallVector<int64_t> shape(op->getType().getShape());
    if (rhsVec)
      shape.erase(shape.end() - 1);
    if (lhsVec)
      shape.erase(shape.end() - (rhsVec ? 1 : 2));
    auto r = n.reshape(result, shape);
    if (failed(r))
      return failure();
    result = *r;
  }
  return n.setOutput(0, result);
}

static LogicalResult convertGemm(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) ||
      failed(n.expectAttrs({"alpha", "beta", "transA", "transB"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  Value c = n.hasInput(2) ? n.input(2) : Value(), bias;
  double beta = n.floatAttr("beta", 1.0);
  bool transB = n.intAttr("transB", 0) != 0;
  // A Linear's bias (C [N] or [1, N], beta 1) is tcc.gemm's bias, as
  // tcc-fuse-gemm-epilogue makes it of a matmul's bias add; any other C
  // broadcasts as c.
  auto bType = llvm::dyn_cast<RankedTensorType>(n.input(1).getType());
  auto cType = c ? llvm::dyn_cast<RankedTensorType>(c.getType()) : nullptr;
  if (cType && bType && bType.getRank() == 2 && beta == 1.0 &&
      (cType.getRank() == 1 || (cType.getRank() == 2 && cType.getDimSize(0) == 1)) &&
      cType.getShape().back() == bType.getDimSize(transB ? 0 : 1)) {
    bias = c;
    c = Value();
    if (cType.getRank() == 2) {
      auto r = n.reshape(bias, {cType.getShape().back()});
      if (failed(r))
        return failure();
      bias = *r;
    }
  }
  auto op = n.create<GemmOp>(
      n.input(0), n.input(1), c, bias, llvm::APFloat(n.floatAttr("alpha", 1.0)),
      llvm::APFloat(beta), n.intAttr("transA", 0) != 0, transB);
  return failed(op) ? failure() : n.setOutput(0, op->getResult());
}

/// Softmax and LogSoftmax with opset-13 semantics (one axis, default -1).
template <typename OpT> static LogicalResult convertSoftmax(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"axis"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  auto axis =
      n.normalizeAxis(n.intAttr("axis", -1), n.inputType(0).getRank(), "axis");
  if (failed(axis))
    return failure();
  auto op = n.create<OpT>(n.input(0), *axis);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// LayerNormalization's optional Mean and InvStdDev outputs (the normalised
/// dims kept as 1s, in the stash type). PyTorch never asks for them, so they
/// are computed on the side and tcc.layer_norm stays one op.
static LogicalResult layerNormStatistics(NodeImporter &n, int64_t axis,
                                         double epsilon) {
  auto stash = n.elementType(n.intAttr("stash_type", 1));
  if (failed(stash))
    return failure();
  Value x = n.input(0);
  Type elem = n.inputElementType(0);
  llvm::SmallVector<int64_t> axes;
  for (int64_t d = axis; d < n.inputType(0).getRank(); ++d)
    axes.push_back(d);
  auto mean = n.create<ReduceMeanOp>(x, axes, true);
  if (failed(mean))
    return failure();
  auto centered = n.create<SubOp>(x, *mean);
  if (failed(centered))
    return failure();
  auto square = n.create<MulOp>(*centered, *centered);
  if (failed(square))
    return failure();
  auto var = n.create<ReduceMeanOp>(*square, axes, true);
  if (failed(var))
    return failure();
  auto shifted = n.create<AddOp>(*var, n.scalar(elem, epsilon));
  if (failed(shifted))
    return failure();
  auto invStd = n.create<RsqrtOp>(*shifted);
  if (failed(invStd) || failed(n.setOutput(1, n.cast(*mean, *stash))))
    return failure();
  return n.setOutput(2, n.cast(*invStd, *stash));
}

static LogicalResult convertLayerNorm(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) ||
      failed(n.expectAttrs({"axis", "epsilon", "stash_type"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  RankedTensorType type = n.inputType(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", -1), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  double epsilon = n.floatAttr("epsilon", 1e-5);
  if ((n.outputUsed(1) || n.outputUsed(2)) &&
      failed(layerNormStatistics(n, *axis, epsilon)))
    return failure();
  // ONNX lets scale and bias broadcast to the normalised shape; tcc wants
  // them exactly that shape.
  llvm::ArrayRef<int64_t> normShape = type.getShape().drop_front(*axis);
  Value affine[2];
  for (int i : {1, 2}) {
    if (!n.hasInput(i))
      continue;
    auto v = n.broadcast(n.input(i), normShape);
    if (failed(v))
      return failure();
    affine[i - 1] = *v;
  }
  auto op = n.create<LayerNormOp>(n.input(0), affine[0], affine[1], *axis,
                                  llvm::APFloat(epsilon));
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// x [N, C, ...] normalised per sample over `groups` groups of channels
/// (with their spatial elements), then scaled and shifted per channel:
/// one tcc.layer_norm over the last dim of the [N, groups, rest] view (the
/// same statistics: population variance, epsilon inside the square root),
/// its result taking scale and bias [C] broadcast as [C, 1, ...].
static LogicalResult normalizeGroups(NodeImporter &n, int64_t groups) {
  RankedTensorType type = n.inputType(0);
  if (type.getRank() < 3)
    return n.fail("the input must have rank 3 or more ([N, C, D1, ...]), not " +
                  std::to_string(type.getRank()));
  llvm::ArrayRef<int64_t> shape = type.getShape();
  if (groups <= 0 || shape[1] % groups != 0)
    return n.fail("num_groups " + std::to_string(groups) +
                  " does not divide the " + std::to_string(shape[1]) +
                  " channels");
  for (int i : {1, 2})
    if (n.inputType(i).getNumElements() != shape[1] ||
        n.inputType(i).getRank() != 1)
      return n.unsupported(std::string(i == 1 ? "scale" : "bias") +
                           " is not one value per channel ([" +
                           std::to_string(shape[1]) + "])");
  double epsilon = n.floatAttr("epsilon", 1e-5);
  int64_t rest = type.getNumElements() / (shape[0] * groups);
  auto flat = n.reshape(n.input(0), {shape[0], groups, rest});
  if (failed(flat))
    return failure();
  auto norm = n.create<LayerNormOp>(*flat, Value(), Value(), int64_t(2),
                                    llvm::APFloat(epsilon));
  if (failed(norm))
    return failure();
  auto back = n.reshape(*norm, shape);
  if (failed(back))
    return failure();
  llvm::SmallVector<int64_t> perChannel(shape.size() - 1, 1);
  perChannel[0] = shape[1];
  auto scale = n.reshape(n.input(1), perChannel);
  auto bias = n.reshape(n.input(2), perChannel);
  if (failed(scale) || failed(bias))
    return failure();
  auto scaled = n.create<MulOp>(*back, *scale);
  if (failed(scaled))
    return failure();
  auto out = n.create<AddOp>(*scaled, *bias);
  return failed(out) ? failure() : n.setOutput(0, *out);
}

/// InstanceNormalization (nn.InstanceNorm1d/2d, and nn.GroupNorm as the
/// dynamo exporter writes it below opset 21: a reshape to [N, groups, rest]
/// around one): a group per channel.
static LogicalResult convertInstanceNorm(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(n.expectAttrs({"epsilon"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  int64_t channels = n.inputType(0).getRank() >= 2 ? n.inputShape(0)[1] : 0;
  return normalizeGroups(n, channels);
}

/// GroupNormalization (opset 21: scale and bias per channel; opset 18's
/// per-group ones are refused as unsupported).
static LogicalResult convertGroupNorm(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) ||
      failed(n.expectAttrs({"epsilon", "num_groups", "stash_type"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  if (!n.attr("num_groups"))
    return n.fail("attribute 'num_groups' is required");
  if (n.intAttr("stash_type", 1) != 1)
    return n.unsupported("stash_type other than float32");
  return normalizeGroups(n, n.intAttr("num_groups", 0));
}

/// Dropout is the identity unless training_mode is a constant true. Then it
/// becomes tcc.dropout with a fixed seed: the node's `seed` attribute when
/// present, else its index in the graph, so that each dropout site draws its
/// own (reproducible) mask.
static LogicalResult convertDropout(NodeImporter &n) {
  if (failed(n.expectInputs(1, 3)) || failed(n.expectAttrs({"seed"})))
    return failure();
  bool training = false;
  double ratio = 0.5;
  if (n.hasInput(2)) {
    DenseElementsAttr c = n.constantInput(2);
    if (!c)
      return n.unsupported("training_mode ('" + n.node().input(2) +
                           "') must be a constant");
    if (c.getNumElements() != 1 || !llvm::isa<IntegerType>(c.getElementType()))
      return n.fail("training_mode must be a bool scalar");
    training = intValues(c).front() != 0;
  }
  if (n.hasInput(1)) {
    DenseElementsAttr c = n.constantInput(1);
    if (!c && training)
      return n.unsupported("ratio ('" + n.node().input(1) +
                           "') must be a constant in training mode");
    if (c && c.getNumElements() != 1)
      return n.fail("ratio must be a scalar");
    if (c)
      ratio = toLit(c)->asDouble(0);
  }
  if (training && ratio != 0) {
    if (!(ratio > 0 && ratio < 1))
      return n.unsupported("ratio " + std::to_string(ratio) +
                           " is outside [0, 1)");
    if (failed(expectFloat(n, 0)))
      return failure();
    auto op = n.create<DropoutOp>(n.input(0), Value(), Value(), llvm::APFloat(ratio),
                                  uint64_t(n.intAttr("seed", n.index())));
    if (failed(op))
      return failure();
    if (failed(n.setOutput(0, op->getResult())))
      return failure();
    return n.setOutput(1, op->getMask());
  }
  if (DenseElementsAttr c = n.constantInput(0)) {
    if (failed(n.setConstant(0, c)))
      return failure();
  } else if (failed(n.setOutput(0, n.input(0)))) {
    return failure();
  }
  if (!n.outputUsed(1))
    return success();
  auto maskType = n.inputType(0).clone(IntegerType::get(n.context(), 1));
  return n.setConstant(1, splatOf(maskType, 1));
}

/// Gelu (opset 20): PyTorch's exporters emit it for nn.GELU and F.gelu from
/// opset 20 on; older exports spell it out and RaiseGelu.cpp raises them.
static LogicalResult convertGelu(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({"approximate"})) ||
      failed(expectFloat(n, 0)))
    return failure();
  GeluApprox approx = GeluApprox::none;
  if (const onnx::AttributeProto *a = n.attr("approximate")) {
    if (a->s() == "tanh")
      approx = GeluApprox::tanh;
    else if (a->s() != "none")
      return n.unsupported("attribute 'approximate' is '" + a->s() +
                           "' (expected 'none' or 'tanh')");
  }
  auto op = n.create<GeluOp>(n.input(0), approx);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

void registerNnConverters(ConverterTable &table) {
  table["MatMul"] = convertMatMul;
  table["Gemm"] = convertGemm;
  table["Softmax"] = convertSoftmax<SoftmaxOp>;
  table["LogSoftmax"] = convertSoftmax<LogSoftmaxOp>;
  table["LayerNormalization"] = convertLayerNorm;
  table["InstanceNormalization"] = convertInstanceNorm;
  table["GroupNormalization"] = convertGroupNorm;
  table["Dropout"] = convertDropout;
  table["Gelu"] = convertGelu;
}

} // namespace tcc::onnx_import
