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
                              resultGrads[0], /*residual_grad=*/Value(),
                              getAxisAttr(), getEpsilonAttr());
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

/// The gradient of a matrix `rhs` broadcast over the batch dims of an
/// untransposed `lhs` [..., M, K] (x @ W with x of rank >= 3): the sum over
/// the batch of lhs_b^T g_b (or g_b^T lhs_b for a transposed rhs) is one
/// product over all the rows, [B*M, K]^T @ [B*M, N], instead of a batched
/// product [B, K, N] and a reduction over B: one GEMM, no B x K x N
/// temporary, no reduction kernel (PyTorch's weight gradient is that GEMM
/// too). Null when the shapes are not of that form.
static Value flattenedWeightGrad(OpBuilder &b, Location loc, Value lhs,
                                 Value rhs, Value g, bool tl, bool tr) {
  auto lt = tensorTypeOf(lhs), rt = tensorTypeOf(rhs), gt = tensorTypeOf(g);
  if (tl || rt.getRank() != 2 || lt.getRank() < 3 ||
      lt.getRank() != gt.getRank() || !lt.hasStaticShape() ||
      !gt.hasStaticShape())
    return Value();
  int64_t rows = 1;
  for (int64_t i = 0; i + 2 < lt.getRank(); ++i) {
    if (lt.getDimSize(i) != gt.getDimSize(i))
      return Value();
    rows *= lt.getDimSize(i);
  }
  rows *= lt.getDimSize(lt.getRank() - 2);
  auto flat = [&](Value v, RankedTensorType t) -> Value {
    return ReshapeOp::create(
        b, loc,
        RankedTensorType::get({rows, t.getShape().back()}, t.getElementType()),
        v);
  };
  Value x = flat(lhs, lt), y = flat(g, gt);
  // dW = X^T G ([K, N]); of a transposed W, G^T X ([N, K]).
  return tr ? MatmulOp::create(b, loc, y, x, true, false).getResult()
            : MatmulOp::create(b, loc, x, y, true, false).getResult();
}

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
    if (operand == getRhs() && operand != getLhs())
      if (Value dw = flattenedWeightGrad(b, getLoc(), getLhs(), getRhs(),
                                         resultGrads[0], getTransposeLhs(),
                                         getTransposeRhs())) {
        operandGrads.push_back(dw);
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
                                         /*bias=*/Value(), getAlpha(),
                                         APFloat(1.0), p.tx, p.ty)
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
  if (Value bias = getBias())
    operandGrads.push_back(
        wanted(bias) ? sumToShape(b, loc, g, tensorTypeOf(bias)) : Value());
  return success();
}

LogicalResult AttentionOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // Token rows' gradients would be [batch, seq, heads * head_dim] where
  // the operands may be wider rows: autodiff runs before
  // tcc-fold-attention-layout makes them.
  if (getHeads() != 0)
    return emitOpError("is in token rows (heads = ")
           << getHeads() << "), a lowered form autodiff does not take; "
           << "differentiate the heads-first form";
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
