// Gradient rules of the neural-network ops: normalisations, dropout,
// contractions, attention and the loss. The fused ones emit a dedicated
// backward op (TccGradOps.td) that a later pass lowers to one kernel.
#include "tcc/TccVjpUtils.h"

using namespace mlir;
using namespace tcc;

static bool wanted(Value operand) {
  return isFloatTensor(operand) && !operand.getDefiningOp<ConstantOp>();
}

LogicalResult SoftmaxOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(SoftmaxGradOp::create(b, getLoc(), getResult(),
                                               resultGrads[0], getAxis()));
  return success();
}

LogicalResult LogSoftmaxOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(LogSoftmaxGradOp::create(b, getLoc(), getResult(),
                                                  resultGrads[0], getAxis()));
  return success();
}

LogicalResult LayerNormOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto grad =
      LayerNormGradOp::create(b, getLoc(), getInput(), getScale(),
                              resultGrads[0], getAxisAttr(), getEpsilonAttr());
  // One entry per operand that is present; the op always computes all three.
  operandGrads.push_back(grad.getInputGrad());
  if (getScale())
    operandGrads.push_back(grad.getScaleGrad());
  if (getBias())
    operandGrads.push_back(grad.getBiasGrad());
  return success();
}

LogicalResult DropoutOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  // The mask is boolean and never carries a gradient, so the result's does.
  Location loc = getLoc();
  Value g = resultGrads[0];
  Value keep = maskToFloat(b, loc, getMask(), g.getType());
  double scale = 1.0 / (1.0 - getRatio().convertToDouble());
  Value scaled =
      MulOp::create(b, loc, g, scalarLike(b, loc, g.getType(), scale));
  operandGrads.push_back(MulOp::create(b, loc, scaled, keep));
  if (getOffset())
    operandGrads.push_back(nullptr);
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions: with C = op(A) op(B), dop(A) = G op(B)^T and
// dop(B) = op(A)^T G; a transposed operand gets the transpose of those,
// written as one matmul with the right flags, never a tcc.transpose.
//===----------------------------------------------------------------------===//

namespace {
/// One product `alpha * op(x) @ op(y)` to emit.
struct Product {
  Value x, y;
  bool tx, ty;
};

/// The products computing dA and dB of `op(A) @ op(B)` from `g`.
std::pair<Product, Product> contractionGrads(Value a, Value b, Value g, bool ta,
                                             bool tb) {
  Product da = ta ? Product{b, g, tb, true} : Product{g, b, false, !tb};
  Product db = tb ? Product{g, a, true, ta} : Product{a, g, !ta, false};
  return {da, db};
}
} // namespace

LogicalResult MatmulOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  auto [da, db] = contractionGrads(getLhs(), getRhs(), resultGrads[0],
                                   getTransposeLhs(), getTransposeRhs());
  Product products[] = {da, db};
  for (auto [operand, p] : llvm::zip(getOperands(), products)) {
    if (!wanted(operand)) {
      operandGrads.push_back(Value());
      continue;
    }
    // The product has the full broadcast batch dims; an operand that was
    // broadcast over some of them gets their sum.
    Value full = MatmulOp::create(b, getLoc(), p.x, p.y, p.tx, p.ty);
    operandGrads.push_back(
        sumToShape(b, getLoc(), full, tensorTypeOf(operand)));
  }
  return success();
}

LogicalResult GemmOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  auto [da, db] =
      contractionGrads(getA(), getB(), g, getTransposeA(), getTransposeB());
  Value operands[] = {getA(), getB()};
  Product products[] = {da, db};
  for (auto [operand, p] : llvm::zip(operands, products))
    operandGrads.push_back(
        wanted(operand) ? GemmOp::create(b, loc, p.x, p.y, /*c=*/Value(),
                                         getAlpha(), APFloat(1.0), p.tx, p.ty)
                              .getResult()
                        : Value());
  if (Value c = getC()) {
    Value dc;
    if (wanted(c)) {
      double beta = getBeta().convertToDouble();
      dc = beta == 1.0 ? g
                       : MulOp::create(b, loc, g,
                                       scalarLike(b, loc, g.getType(), beta));
      dc = sumToShape(b, loc, dc, tensorTypeOf(c));
    }
    operandGrads.push_back(dc);
  }
  return success();
}

LogicalResult AttentionOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto grad = AttentionGradOp::create(b, getLoc(), getQuery(), getKey(),
                                      getValue(), resultGrads[0], getKeyMask(),
                                      getScaleAttr(), getCausalAttr());
  operandGrads.append(
      {grad.getQueryGrad(), grad.getKeyGrad(), grad.getValueGrad()});
  if (getKeyMask())
    operandGrads.push_back(
        Value()); // a mask, even a float bias, is not trained
  return success();
}

LogicalResult CrossEntropyOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // `count` does not depend on the logits: only loss_sum's gradient flows.
  Value g = resultGrads[0];
  operandGrads.push_back(
      g ? CrossEntropyGradOp::create(b, getLoc(), getLogits().getType(),
                                     getLogits(), getLabels(), g,
                                     getIgnoreIndexAttr())
              .getResult()
        : Value());
  operandGrads.push_back(Value()); // labels
  return success();
}
