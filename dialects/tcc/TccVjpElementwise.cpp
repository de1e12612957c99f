// Gradient rules of the elementwise ops. Binary ops broadcast, so each
// operand's gradient is summed back to its own shape (sumToShape). Where
// PyTorch picks a value at a kink (relu and abs at 0, ties of maximum and
// minimum, pow at a zero base) we pick the same one, so whole-model gradients
// match torch.autograd exactly rather than almost everywhere.
#include "tcc/TccVjpUtils.h"

using namespace mlir;
using namespace tcc;

namespace {

/// Whether an operand's gradient is worth emitting: a float value that is
/// not a constant (autodiff would drop a constant's gradient anyway).
bool wanted(Value operand) {
  return isFloatTensor(operand) && !operand.getDefiningOp<ConstantOp>();
}

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
Value div(OpBuilder &b, Location loc, Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
Value mulScalar(OpBuilder &b, Location loc, Value x, double c) {
  return mul(b, loc, x, scalarLike(b, loc, x.getType(), c));
}

Value oneMinus(OpBuilder &b, Location loc, Value x) {
  return sub(b, loc, scalarLike(b, loc, x.getType(), 1.0), x);
}
Value cube(OpBuilder &b, Location loc, Value x) {
  return mul(b, loc, x, mul(b, loc, x, x));
}
/// `x pred 0`, as i1.
Value vsZero(OpBuilder &b, Location loc, CmpPredicate pred, Value x) {
  return compare(b, loc, pred, x, scalarLike(b, loc, x.getType(), 0.0));
}
/// sign(x) in x's type, with sign(0) = 0.
Value sign(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  return sub(b, loc,
             maskToFloat(b, loc, vsZero(b, loc, CmpPredicate::gt, x), t),
             maskToFloat(b, loc, vsZero(b, loc, CmpPredicate::lt, x), t));
}

/// Appends the gradients of a binary op's operands from `lhsGrad` and
/// `rhsGrad` (result-shaped, either may be null), reduced to each operand.
LogicalResult finishBinary(OpBuilder &b, Operation *op, Value lhsGrad,
                           Value rhsGrad,
                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = op->getLoc();
  Value grads[] = {lhsGrad, rhsGrad};
  for (auto [operand, g] : llvm::zip(op->getOperands(), grads))
    operandGrads.push_back(g && wanted(operand)
                               ? sumToShape(b, loc, g, tensorTypeOf(operand))
                               : Value());
  return success();
}

/// True when `v` is a constant none of whose elements is zero.
bool isNonZeroConstant(Value v) {
  auto cst = v.getDefiningOp<ConstantOp>();
  auto dense =
      cst ? llvm::dyn_cast<DenseElementsAttr>(cst.getValue()) : nullptr;
  if (!dense || !llvm::isa<FloatType>(dense.getElementType()))
    return false;
  return llvm::none_of(dense.getValues<APFloat>(),
                       [](const APFloat &x) { return x.isZero(); });
}

/// max and min: the gradient goes to the selected operand, half to each on a
/// tie, as torch.maximum / torch.minimum do. `select` is gt for max, lt for
/// min.
LogicalResult extremumVjp(OpBuilder &b, Operation *op, CmpPredicate select,
                          Value g, SmallVectorImpl<Value> &operandGrads) {
  Location loc = op->getLoc();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (!isFloatTensor(lhs)) {
    operandGrads.append(2, Value());
    return success();
  }
  Value wins =
      maskToFloat(b, loc, compare(b, loc, select, lhs, rhs), g.getType());
  Value ties = maskToFloat(b, loc, compare(b, loc, CmpPredicate::eq, lhs, rhs),
                           g.getType());
  Value lhsGrad =
      mul(b, loc, g, add(b, loc, wins, mulScalar(b, loc, ties, 0.5)));
  // g - lhsGrad is g where rhs wins and g/2 on ties, exactly.
  return finishBinary(b, op, lhsGrad, sub(b, loc, g, lhsGrad), operandGrads);
}

} // namespace

LogicalResult AddOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return finishBinary(b, *this, resultGrads[0], resultGrads[0], operandGrads);
}

LogicalResult SubOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Value rhsGrad = wanted(getRhs()) ? NegOp::create(b, getLoc(), g) : Value();
  return finishBinary(b, *this, g, rhsGrad, operandGrads);
}

LogicalResult MulOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  Value lhsGrad = wanted(getLhs()) ? mul(b, loc, g, getRhs()) : Value();
  Value rhsGrad = wanted(getRhs()) ? mul(b, loc, g, getLhs()) : Value();
  return finishBinary(b, *this, lhsGrad, rhsGrad, operandGrads);
}

LogicalResult DivOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  Location loc = getLoc();
  Value lhsGrad = wanted(lhs) ? div(b, loc, g, rhs) : Value();
  // -g * a / b^2, in PyTorch's order of operations.
  Value rhsGrad;
  if (wanted(rhs))
    rhsGrad = div(b, loc, mul(b, loc, NegOp::create(b, loc, g), lhs),
                  mul(b, loc, rhs, rhs));
  return finishBinary(b, *this, lhsGrad, rhsGrad, operandGrads);
}

LogicalResult PowOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0], base = getLhs(), exponent = getRhs();
  Location loc = getLoc();
  Value baseGrad, exponentGrad;
  if (wanted(base)) {
    // g * e * b^(e-1); PyTorch makes it 0 where e == 0 (not 0 * inf at b == 0).
    Value em1 =
        sub(b, loc, exponent, scalarLike(b, loc, exponent.getType(), 1.0));
    baseGrad =
        mul(b, loc, mul(b, loc, g, exponent), PowOp::create(b, loc, base, em1));
    if (!isNonZeroConstant(exponent)) {
      Value zeroExp = compare(b, loc, CmpPredicate::eq, exponent,
                              scalarLike(b, loc, exponent.getType(), 0.0));
      baseGrad = WhereOp::create(
          b, loc, zeroExp, scalarLike(b, loc, g.getType(), 0.0), baseGrad);
    }
  }
  if (wanted(exponent)) {
    // g * b^e * log(b), which PyTorch makes 0 where b == 0 and e >= 0 (the
    // limit from the right) instead of 0 * -inf.
    Value zero = scalarLike(b, loc, g.getType(), 0.0);
    Value atZero =
        AndOp::create(b, loc, compare(b, loc, CmpPredicate::eq, base, zero),
                      compare(b, loc, CmpPredicate::ge, exponent, zero));
    Value d = mul(b, loc, getResult(), LogOp::create(b, loc, base));
    exponentGrad = mul(b, loc, g, WhereOp::create(b, loc, atZero, zero, d));
  }
  return finishBinary(b, *this, baseGrad, exponentGrad, operandGrads);
}

LogicalResult MaxOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return extremumVjp(b, *this, CmpPredicate::gt, resultGrads[0], operandGrads);
}

LogicalResult MinOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return extremumVjp(b, *this, CmpPredicate::lt, resultGrads[0], operandGrads);
}

LogicalResult WhereOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0], c = getCondition();
  Location loc = getLoc();
  operandGrads.push_back(Value()); // the condition
  for (auto [branch, onTrue] :
       {std::pair(getOnTrue(), true), std::pair(getOnFalse(), false)}) {
    if (!wanted(branch)) {
      operandGrads.push_back(Value());
      continue;
    }
    Value zero = scalarLike(b, loc, g.getType(), 0.0);
    Value picked = onTrue ? WhereOp::create(b, loc, c, g, zero)
                          : WhereOp::create(b, loc, c, zero, g);
    operandGrads.push_back(sumToShape(b, loc, picked, tensorTypeOf(branch)));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Unary ops: `g` and the operand (or result) always share one type.
//===----------------------------------------------------------------------===//

/// Defines OP::buildVjp with `x` (the input), `y` (the result), `g`, `loc` and
/// `b` in scope; BODY evaluates to the input gradient. Integer inputs (neg,
/// abs, relu of ints) get none.
#define TCC_UNARY_VJP(OP, BODY)                                                \
  LogicalResult OP::buildVjp(OpBuilder &b, ValueRange resultGrads,             \
                             SmallVectorImpl<Value> &operandGrads) {           \
    Value g = resultGrads[0], x = getInput(), y = getResult();                 \
    Location loc = getLoc();                                                   \
    (void)x, (void)y, (void)loc;                                               \
    operandGrads.push_back(isFloatTensor(x) ? Value(BODY) : Value());          \
    return success();                                                          \
  }

TCC_UNARY_VJP(NegOp, NegOp::create(b, loc, g))
// sign(x) * g with sign(0) = 0, as torch.abs's gradient.
TCC_UNARY_VJP(AbsOp, mul(b, loc, g, sign(b, loc, x)))
TCC_UNARY_VJP(ExpOp, mul(b, loc, g, y))
TCC_UNARY_VJP(LogOp, div(b, loc, g, x))
// g / (2 sqrt(x)), from the result as PyTorch does.
TCC_UNARY_VJP(SqrtOp, div(b, loc, g, mulScalar(b, loc, y, 2.0)))
// -0.5 g x^-1.5 = -0.5 g y^3.
TCC_UNARY_VJP(RsqrtOp, mulScalar(b, loc, mul(b, loc, g, cube(b, loc, y)), -0.5))
TCC_UNARY_VJP(TanhOp, mul(b, loc, g, oneMinus(b, loc, mul(b, loc, y, y))))
// g * 2/sqrt(pi) * exp(-x^2).
TCC_UNARY_VJP(ErfOp,
              mul(b, loc, mulScalar(b, loc, g, 1.1283791670955126),
                  ExpOp::create(b, loc,
                                NegOp::create(b, loc, mul(b, loc, x, x)))))
TCC_UNARY_VJP(SigmoidOp, mul(b, loc, mul(b, loc, g, y), oneMinus(b, loc, y)))
// g where x > 0: zero at 0, as torch.relu's threshold_backward.
TCC_UNARY_VJP(ReluOp,
              WhereOp::create(b, loc, vsZero(b, loc, CmpPredicate::gt, x), g,
                              scalarLike(b, loc, g.getType(), 0.0)))
TCC_UNARY_VJP(CosOp,
              NegOp::create(b, loc, mul(b, loc, g, SinOp::create(b, loc, x))))
TCC_UNARY_VJP(SinOp, mul(b, loc, g, CosOp::create(b, loc, x)))
TCC_UNARY_VJP(GeluOp, GeluGradOp::create(b, loc, x, g, getApproximate()))
#undef TCC_UNARY_VJP

LogicalResult CastOp::buildVjp(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  // Only float -> float carries a gradient (cast back); through an integer
  // or boolean the function is piecewise constant.
  bool floats = isFloatTensor(getInput()) && isFloatTensor(getResult());
  operandGrads.push_back(
      floats ? CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0])
                   .getResult()
             : Value());
  return success();
}
